/**
 * A per-frame series kept in bounded memory for the HTML report, however long the run.
 *
 * Decimation (min/max per bucket, so that spikes and drops stay visible):
 *   - While the series has at most `maxPoints` frames, every frame is kept as it is.
 *   - When one more frame would need more, adjacent buckets are merged in pairs (each
 *     bucket then covers 2, 4, 8, … consecutive frames, all full except the newest) until
 *     at most `maxPoints / 2` buckets are left. A bucket of several frames keeps its
 *     lowest and its highest value, each at the frame where it occurred, and is drawn as
 *     those two points in frame order. A bucket of one frame is drawn as that frame.
 * So the plot never has more than `maxPoints` points, the series' global minimum and
 * maximum are always among them, and every single-frame drop is still drawn at its
 * depth. Memory is O(maxPoints) per series: typed arrays, grown by doubling up to
 * maxPoints entries (about 52 bytes each: 0.5 MB at the default).
 *
 * Non-finite values (NaN, ±Infinity) are counted in frameCount but not plotted.
 */

/** One point of the plot: a frame index and its value. */
export interface SeriesPoint {
  index: number;
  value: number;
}

/** The default `maxPoints`: every frame of runs up to 10,000 frames is drawn. */
export const DEFAULT_MAX_POINTS = 10_000;

export class MinMaxSeries {
  /** The most points points() returns (and twice the buckets kept once decimated). */
  readonly maxPoints: number;
  /** Frames per full bucket: 1 while every frame is kept, then 2, 4, 8, … */
  private width = 1;
  /** Buckets in use. */
  private n = 0;
  private frames = 0;
  // One column per bucket field; they grow (doubling) up to maxPoints entries.
  private count: Uint32Array;
  private first: Float64Array;
  private firstPts: Float64Array;
  private minIndex: Float64Array;
  private minValue: Float64Array;
  private maxIndex: Float64Array;
  private maxValue: Float64Array;
  private lastIndex = NaN;
  private lastPts = NaN;

  constructor(maxPoints: number = DEFAULT_MAX_POINTS) {
    if (!Number.isInteger(maxPoints) || maxPoints < 4) throw new RangeError(`maxPoints must be an integer of at least 4, not ${maxPoints}`);
    this.maxPoints = maxPoints;
    const size = Math.min(maxPoints, 256);
    this.count = new Uint32Array(size);
    this.first = new Float64Array(size);
    this.firstPts = new Float64Array(size);
    this.minIndex = new Float64Array(size);
    this.minValue = new Float64Array(size);
    this.maxIndex = new Float64Array(size);
    this.maxValue = new Float64Array(size);
  }

  /** Adds the next frame (frames in increasing index order). `pts` in seconds, if known. */
  add(index: number, value: number, pts?: number): void {
    this.frames++;
    if (!Number.isFinite(value)) return;
    const time = pts !== undefined && Number.isFinite(pts) ? pts : NaN;
    this.lastIndex = index;
    this.lastPts = time;
    const last = this.n - 1;
    if (last >= 0 && this.count[last]! < this.width) {
      this.count[last]!++;
      if (value < this.minValue[last]!) {
        this.minValue[last] = value;
        this.minIndex[last] = index;
      }
      if (value > this.maxValue[last]!) {
        this.maxValue[last] = value;
        this.maxIndex[last] = index;
      }
      return;
    }
    while (this.n >= this.capacity()) this.compact();
    if (this.n === this.count.length) this.grow();
    const b = this.n++;
    this.count[b] = 1;
    this.first[b] = index;
    this.firstPts[b] = time;
    this.minIndex[b] = index;
    this.minValue[b] = value;
    this.maxIndex[b] = index;
    this.maxValue[b] = value;
  }

  /** Frames added (including those with non-finite values). */
  get frameCount(): number {
    return this.frames;
  }

  /** Frames each bucket covers: 1 means every frame is drawn. */
  get framesPerBucket(): number {
    return this.width;
  }

  get decimated(): boolean {
    return this.width > 1;
  }

  /** The points to draw, in frame order: at most maxPoints. */
  points(): SeriesPoint[] {
    const out: SeriesPoint[] = [];
    for (let b = 0; b < this.n; b++) {
      const lo = { index: this.minIndex[b]!, value: this.minValue[b]! };
      const hi = { index: this.maxIndex[b]!, value: this.maxValue[b]! };
      if (this.count[b] === 1 || lo.index === hi.index) out.push(lo);
      else if (lo.index < hi.index) out.push(lo, hi);
      else out.push(hi, lo);
    }
    return out;
  }

  /** Lowest and highest finite value, or undefined when there is none. */
  extent(): { min: number; max: number; first: number; last: number } | undefined {
    if (this.n === 0) return undefined;
    let min = Infinity;
    let max = -Infinity;
    for (let b = 0; b < this.n; b++) {
      if (this.minValue[b]! < min) min = this.minValue[b]!;
      if (this.maxValue[b]! > max) max = this.maxValue[b]!;
    }
    return { min, max, first: this.first[0]!, last: this.lastIndex };
  }

  /**
   * (frame index, pts) samples at each bucket's first frame and at the last frame, for
   * frames whose pts is known: enough to map frame indices to times (timeAt()).
   */
  timeSamples(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let b = 0; b < this.n; b++) if (!Number.isNaN(this.firstPts[b]!)) out.push([this.first[b]!, this.firstPts[b]!]);
    if (!Number.isNaN(this.lastPts) && (out.length === 0 || out[out.length - 1]![0] < this.lastIndex)) out.push([this.lastIndex, this.lastPts]);
    return out;
  }

  /** Buckets allowed at the current width: maxPoints single frames, or maxPoints/2 min/max pairs. */
  private capacity(): number {
    return this.width === 1 ? this.maxPoints : Math.floor(this.maxPoints / 2);
  }

  private grow(): void {
    const size = Math.min(this.maxPoints, this.count.length * 2);
    const widen = <T extends Uint32Array | Float64Array>(column: T, make: (n: number) => T): T => {
      const next = make(size);
      next.set(column);
      return next;
    };
    this.count = widen(this.count, (n) => new Uint32Array(n));
    this.first = widen(this.first, (n) => new Float64Array(n));
    this.firstPts = widen(this.firstPts, (n) => new Float64Array(n));
    this.minIndex = widen(this.minIndex, (n) => new Float64Array(n));
    this.minValue = widen(this.minValue, (n) => new Float64Array(n));
    this.maxIndex = widen(this.maxIndex, (n) => new Float64Array(n));
    this.maxValue = widen(this.maxValue, (n) => new Float64Array(n));
  }

  /** Merges buckets 2k and 2k+1; doubles the width. */
  private compact(): void {
    let out = 0;
    for (let b = 0; b < this.n; b += 2, out++) {
      this.count[out] = this.count[b]!;
      this.first[out] = this.first[b]!;
      this.firstPts[out] = this.firstPts[b]!;
      this.minIndex[out] = this.minIndex[b]!;
      this.minValue[out] = this.minValue[b]!;
      this.maxIndex[out] = this.maxIndex[b]!;
      this.maxValue[out] = this.maxValue[b]!;
      const c = b + 1;
      if (c >= this.n) continue;
      this.count[out] += this.count[c]!;
      // Ties keep the earlier frame.
      if (this.minValue[c]! < this.minValue[out]!) {
        this.minValue[out] = this.minValue[c]!;
        this.minIndex[out] = this.minIndex[c]!;
      }
      if (this.maxValue[c]! > this.maxValue[out]!) {
        this.maxValue[out] = this.maxValue[c]!;
        this.maxIndex[out] = this.maxIndex[c]!;
      }
    }
    this.n = out;
    this.width *= 2;
  }
}
