/**
 * Pooling per-frame values into one number per run, as libvmaf's vmaf_feature_score_pooled
 * does, streaming: values are added in frame order, and the running sums are libvmaf's,
 * in libvmaf's order, so the results have the same bits.
 *
 *   min, max        of the values (the first value seeds both; a NaN seed stays)
 *   mean            (v1 + v2 + ... + vn) / n, summed left to right from 0
 *   harmonic_mean   n / (1/(v1+1) + ... + 1/(vn+1)) - 1
 *                   (the harmonic mean of v+1, minus 1, so that 0 scores are allowed)
 */
export type PoolingMethod = 'min' | 'max' | 'mean' | 'harmonic_mean';

export const POOLING_METHODS: readonly PoolingMethod[] = Object.freeze(['min', 'max', 'mean', 'harmonic_mean'] as const);

export interface PooledResult {
  min: number;
  max: number;
  mean: number;
  harmonic_mean: number;
}

export class PooledStats {
  private n = 0;
  private sum = 0;
  private inverseSum = 0;
  private lowest = 0;
  private highest = 0;

  add(value: number): void {
    this.sum += value;
    this.inverseSum += 1 / (value + 1);
    if (this.n === 0 || value < this.lowest) this.lowest = value;
    if (this.n === 0 || value > this.highest) this.highest = value;
    this.n++;
  }

  get count(): number {
    return this.n;
  }

  /** The pooled values; with no values added, mean and harmonic_mean are NaN and min, max 0 (as libvmaf's would be). */
  result(): PooledResult {
    return {
      min: this.lowest,
      max: this.highest,
      mean: this.sum / this.n,
      harmonic_mean: this.n / this.inverseSum - 1.0,
    };
  }

  /** One pooled value. */
  pooled(method: PoolingMethod): number {
    return this.result()[method];
  }
}
