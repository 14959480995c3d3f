/**
 * Bootstrap models (vmaf_b_v0.6.3): model "0" of the file gives the main score; models
 * "1".."n" were trained on resampled data, and their spread gives a confidence interval.
 * Per frame, as libvmaf 3.2.0 computes and logs them, for a model named NAME:
 *
 *   NAME                 model "0", transformed and clipped as usual
 *   NAME_0001..NAME_nnnn model "i", transformed and clipped as usual
 *   NAME_bagging         mean of the n untransformed, unclipped predictions, then
 *                        transformed and clipped with model "1"'s settings
 *   NAME_stddev          population standard deviation (divide by n) of those
 *                        predictions, times the slope of model "1"'s transform+clip at the
 *                        mean (central difference, +-0.01)
 *   NAME_ci_p95_lo/hi    2.5th and 97.5th percentiles of the predictions (linear
 *                        interpolation between sorted values at p*(n-1)/100), then
 *                        transformed and clipped with model "1"'s settings
 */
import type { FeatureValues } from '../../types.js';
import type { Model, Predictor } from './model.js';
import type { FeatureRequest } from '../../extractors/request.js';

export const BOOTSTRAP_SUFFIXES = ['_bagging', '_stddev', '_ci_p95_lo', '_ci_p95_hi'] as const;

const DELTA = 0.01;

export class BootstrapModel implements Model {
  readonly featureKeys: readonly string[];
  readonly features: readonly FeatureRequest[];
  /** Log keys of the per-model scores, NAME_0001 ... */
  readonly memberNames: readonly string[];
  private readonly scores: Float64Array;
  private readonly sorted: Float64Array;
  private readonly baggingName: string;
  private readonly stddevName: string;
  private readonly loName: string;
  private readonly hiName: string;
  readonly scoreless: string | undefined;

  constructor(
    readonly name: string,
    readonly version: string,
    private readonly main: Predictor,
    private readonly members: readonly Predictor[],
  ) {
    const keys = new Set<string>(main.featureKeys);
    for (const m of members) for (const k of m.featureKeys) keys.add(k);
    this.featureKeys = [...keys];
    this.features = [main, ...members].flatMap((p) => p.features);
    this.memberNames = members.map((_, i) => `${name}_${String(i + 1).padStart(4, '0')}`);
    this.scores = new Float64Array(members.length);
    this.sorted = new Float64Array(members.length);
    this.baggingName = `${name}_bagging`;
    this.stddevName = `${name}_stddev`;
    this.loName = `${name}_ci_p95_lo`;
    this.hiName = `${name}_ci_p95_hi`;
    this.scoreless = [main, ...members].find((p) => p.scoreless !== undefined)?.scoreless;
  }

  predict(features: FeatureValues): Record<string, number> {
    const out: Record<string, number> = { [this.name]: this.main.score(features) };
    const n = this.members.length;
    const scores = this.scores;
    for (let i = 0; i < n; i++) {
      const m = this.members[i]!;
      const raw = m.raw(features);
      scores[i] = raw;
      out[this.memberNames[i]!] = m.finish(raw);
    }

    let sum = 0;
    for (let i = 0; i < n; i++) sum += scores[i]!;
    const mean = sum / n;
    let ssd = 0;
    for (let i = 0; i < n; i++) {
      const d = scores[i]! - mean;
      ssd += d * d;
    }
    let stddev = Math.sqrt(ssd / n);

    const sorted = this.sorted;
    sorted.set(scores);
    sorted.sort(); // numeric ascending
    const lo = percentile(sorted, 2.5);
    const hi = percentile(sorted, 97.5);

    const ref = this.members[0]!;
    const slope = (ref.finish(mean + DELTA) - ref.finish(mean - DELTA)) / (2.0 * DELTA);
    stddev *= slope;

    out[this.baggingName] = ref.finish(mean);
    out[this.stddevName] = stddev;
    out[this.loName] = ref.finish(lo);
    out[this.hiName] = ref.finish(hi);
    return out;
  }
}

/** libvmaf's percentile of sorted values: linear interpolation at perc * (n - 1) / 100. */
function percentile(sorted: Float64Array, perc: number): number {
  const p = (perc * (sorted.length - 1)) / 100;
  const l = Math.floor(p);
  const r = Math.ceil(p);
  return l === r ? sorted[l]! : sorted[l]! * (r - p) + sorted[r]! * (p - l);
}
