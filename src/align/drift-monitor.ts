/**
 * DriftMonitor: live detection of dropped and repeated frames in the distorted stream.
 *
 * It watches two things, each through one call per frame:
 * - observePair(pair), before the backend: copies a thumbnail of each luma plane (the
 *   points of a grid, see luma-psnr's thumbnail()) into two fixed rings. It holds no pool
 *   frame: the caller releases the pair as usual, even right after the call.
 * - observeScore(index, score), after the backend: a per-frame score, higher is better
 *   (VMAF by default). With metric 'psnr' the monitor scores each pair itself (luma PSNR of
 *   the thumbnails) and needs no scores.
 *
 * Collapse detection, on the scores in index order:
 * - baseline = median of the last `window` (15) normal scores (at least 5 needed);
 * - a score is low when below baseline − max(minDrop, dropFraction · baseline)
 *   (dropFraction 0.1; minDrop 5 VMAF points, or 3 dB with metric 'psnr'). A frame of
 *   misalignment costs ~15 VMAF points / ~7 dB on moving content (the golden 160x90 clip:
 *   ~92 → 72–81); the gate is lenient on purpose: a false trigger costs one local search
 *   and at worst a 'collapse' event, while alignment events need evidence in the frames;
 * - `collapseFrames` (3) low scores in a row: a collapse, starting at the first of them;
 *   the baseline freezes; as many normal scores in a row afterwards: a recovery, starting
 *   at the first of them. A collapse lasting 2·window scores becomes the new normal (a
 *   lasting offset, a harder scene); from a normal level, `collapseFrames` scores in a row
 *   as far above the baseline as a low one is below it count as a recovery too.
 * Each collapse and each recovery queues a local search around its start c, run once the
 * score of a frame at or past c + after − 1 + localRange (plus the offset known so far, when
 * positive) has been observed, the pairs up to there too, or at end(): placed in frame
 * terms, so a run reports it right after the same frame however far its decoding ran ahead
 * of its scores (with metric 'psnr' the scores are the pairs': right after that pair, or at
 * endPairs()):
 * - S[p][o] = PSNR(dis thumbnail of pair p, ref thumbnail of pair p + o) for pairs p in
 *   [c − before, c + after) and offsets o in [cur − n, cur + n] (cur: the offset known so
 *   far, 0 at the start; n = localRange);
 * - the best two-segment fit: offset oB before pair t, oA from t on (oB ≠ oA), maximizing
 *   Σ S; it is kept when it beats the best single offset o0 by at least minGain dB
 *   (default 1) per frame of the segment where it differs from o0, that segment having
 *   at least 2 frames;
 * - kept with oB = cur: oA − cur = +1 → 'dropped' (the distorted stream skipped a frame:
 *   from t on, its frame shows the reference one frame later), −1 → 'repeated' (it showed
 *   a frame twice, or inserted one: from t on it is one frame behind), else 'offset';
 *   kept with oB ≠ cur: 'offset' (a change the scores did not show, then this one);
 * - none kept, but a single offset o0 ≠ cur beats cur by minGain over the whole window:
 *   'offset' at the window's start (the change came before it);
 * - none, on a collapse: 'collapse' (the scores fell but alignment does not explain it).
 * Offsets are relative to the pairing the monitor sees (after alignPairs' own offset, if
 * any): pair p's distorted frame shows pair (p + offset)'s reference frame. The monitor
 * only reports; it does not re-pair.
 *
 * Memory: 2 rings of `history` thumbnails of at most maxSamples samples (default 16384),
 * history = maxLag + collapseFrames + before + after + 2·localRange + 8 (maxLag: how far
 * the pairs may run ahead of the scores, default 64): about 3 MB at 8 bits. Scores: a few
 * windows of numbers.
 */
import { type MonoTypeOperatorFunction, finalize, tap } from '../rx.js';

import { UsageError } from '../errors.js';
import type { FrameFormat, FramePair } from '../types.js';
import { gridStep, lumaPsnr, thumbnail, thumbnailGeometry, type Luma, type LumaGeometry } from './luma-psnr.js';

export type DriftEventKind = 'dropped' | 'repeated' | 'offset' | 'collapse';

export interface DriftEvent {
  kind: DriftEventKind;
  /** The first pair index with the new offset (for 'collapse': where the scores fell). */
  atIndex: number;
  /** From atIndex on, pair p's distorted frame shows pair (p + offset)'s reference frame. */
  offset: number;
  /** The offset before atIndex. */
  previousOffset: number;
  /** What queued the search: the scores fell, or came back (rose). */
  trigger: 'collapse' | 'recovery';
  /** Index of the score that completed the trigger. */
  triggerIndex: number;
  /** The median score before the collapse. */
  baseline: number;
  /** Mean PSNR gain in dB of the new offset over the old on the frames where they differ (0 for 'collapse'). */
  gain: number;
  /** False when the frames around atIndex had already left the rings (maxLag too small). */
  analysed: boolean;
}

export interface DriftMonitorOptions {
  /** 'score' (default): scores come from observeScore (VMAF); 'psnr': each pair's thumbnail luma PSNR. */
  metric?: 'score' | 'psnr' | undefined;
  /** Normal scores in the median baseline (default 15). */
  window?: number | undefined;
  /** Low (normal) scores in a row that make a collapse (a recovery) (default 3). */
  collapseFrames?: number | undefined;
  /** Low: below baseline − max(minDrop, dropFraction · baseline). Default 0.1. */
  dropFraction?: number | undefined;
  /** Default 5 VMAF points (psnr: 3 dB). */
  minDrop?: number | undefined;
  /** n: offsets cur − n .. cur + n are searched (default 2). */
  localRange?: number | undefined;
  /** Pairs searched before and from the trigger's start (default 8 and 8). */
  before?: number | undefined;
  after?: number | undefined;
  /** dB per frame a change of offset must explain (default 1). */
  minGain?: number | undefined;
  /** Samples per thumbnail at most (default 16384); `step` sets the grid step instead. */
  maxSamples?: number | undefined;
  step?: number | undefined;
  /** How many pairs observePair may run ahead of observeScore (default 64); sizes the rings. */
  maxLag?: number | undefined;
  onEvent?: ((event: DriftEvent) => void) | undefined;
}

interface Job {
  trigger: 'collapse' | 'recovery';
  start: number;
  triggerIndex: number;
  baseline: number;
}

/** A fixed ring of thumbnails keyed by pair index. */
class ThumbRing {
  private readonly buffers: Luma[] = [];
  private readonly indices: number[];
  constructor(private readonly capacity: number, private readonly samples: number, private readonly wide: boolean) {
    this.indices = new Array<number>(capacity).fill(-1);
  }

  put(index: number, luma: Luma, format: FrameFormat, step: number): Luma {
    const slot = index % this.capacity;
    let buffer = this.buffers[slot];
    if (!buffer) {
      buffer = this.wide ? new Uint16Array(this.samples) : new Uint8Array(this.samples);
      this.buffers[slot] = buffer;
    }
    thumbnail(luma, format.width, format.height, step, buffer);
    this.indices[slot] = index;
    return buffer;
  }

  get(index: number): Luma | undefined {
    if (index < 0) return undefined;
    const slot = index % this.capacity;
    return this.indices[slot] === index ? this.buffers[slot] : undefined;
  }
}

function option(name: string, value: number | undefined, fallback: number, min: number, integer = true): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new UsageError(`drift monitor: ${name} must be ${integer ? 'a whole number' : 'a number'} >= ${min}, got ${String(value)}`);
  }
  return value;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const MIN_BASELINE = 5;

export class DriftMonitor {
  private readonly metric: 'score' | 'psnr';
  private readonly window: number;
  private readonly collapseFrames: number;
  private readonly dropFraction: number;
  private readonly minDrop: number;
  private readonly localRange: number;
  private readonly before: number;
  private readonly after: number;
  private readonly minGain: number;
  private readonly maxSamples: number;
  private readonly fixedStep: number | undefined;
  private readonly history: number;
  private readonly onEvent: ((event: DriftEvent) => void) | undefined;

  private geometry: LumaGeometry | undefined;
  private step = 1;
  private refRing: ThumbRing | undefined;
  private disRing: ThumbRing | undefined;
  private newestPair = -1;
  private pairsEnded = false;
  /** end() was called (or, with metric 'psnr', endPairs()): searches still waiting run now. */
  private finished = false;

  private currentOffset = 0;
  private normal: number[] = [];
  private recent: number[] = [];
  private lastScoreIndex = -1;
  private isCollapsed = false;
  private frozenBaseline = 0;
  private threshold = 0;
  private run = 0;
  private runSide = 0;
  private runStart = 0;
  private collapsedFor = 0;
  private readonly jobs: Job[] = [];
  private eventCount = 0;
  private thumbnails = 0;

  constructor(options: DriftMonitorOptions = {}) {
    this.metric = options.metric ?? 'score';
    if (this.metric !== 'score' && this.metric !== 'psnr') throw new UsageError(`drift monitor: metric must be 'score' or 'psnr', got ${String(this.metric)}`);
    const psnr = this.metric === 'psnr';
    this.window = option('window', options.window, 15, MIN_BASELINE);
    this.collapseFrames = option('collapseFrames', options.collapseFrames, 3, 1);
    this.dropFraction = option('dropFraction', options.dropFraction, 0.1, 0, false);
    this.minDrop = option('minDrop', options.minDrop, psnr ? 3 : 5, 0, false);
    this.localRange = option('localRange', options.localRange, 2, 1);
    this.before = option('before', options.before, 8, 1);
    this.after = option('after', options.after, 8, 2);
    this.minGain = option('minGain', options.minGain, 1, 0, false);
    this.maxSamples = option('maxSamples', options.maxSamples, 1 << 14, 1);
    this.fixedStep = options.step === undefined ? undefined : option('step', options.step, 1, 1);
    const maxLag = option('maxLag', options.maxLag, 64, 0);
    this.history = maxLag + this.collapseFrames + this.before + this.after + 2 * this.localRange + 8;
    this.onEvent = options.onEvent;
  }

  /** The offset known so far (0 until an event says otherwise). */
  get offset(): number {
    return this.currentOffset;
  }

  /** The scores are in a collapse now. */
  get collapsed(): boolean {
    return this.isCollapsed;
  }

  /**
   * Where each search queued so far and not yet run starts. A queued title's coordinator
   * (src/queue) reads it to decode just the pairs a search needs: it has no pairs otherwise.
   */
  get queuedSearches(): number[] {
    return this.jobs.map((job) => job.start);
  }

  /** Events reported so far. */
  get events(): number {
    return this.eventCount;
  }

  /** Thumbnails copied so far (two per pair observed): the monitor's cost on the decode side. */
  get thumbnailsTaken(): number {
    return this.thumbnails;
  }

  /** Thumbnails each ring holds. */
  get historySize(): number {
    return this.history;
  }

  /**
   * Before the backend, once per pair in index order: copies thumbnails of both frames
   * (the pair stays the caller's to release). With metric 'psnr' it also scores the pair.
   */
  observePair(pair: FramePair): void {
    const format = pair.ref.format;
    if (!this.geometry) {
      this.step = this.fixedStep ?? gridStep(format.width, format.height, this.maxSamples);
      this.geometry = thumbnailGeometry(format, this.step);
      const samples = this.geometry.width * this.geometry.height;
      this.refRing = new ThumbRing(this.history, samples, format.bitDepth > 8);
      this.disRing = new ThumbRing(this.history, samples, format.bitDepth > 8);
    }
    if (pair.index <= this.newestPair) return;
    const r = this.refRing!.put(pair.index, pair.ref.luma, format, this.step);
    const d = this.disRing!.put(pair.index, pair.dis.luma, pair.dis.format, this.step);
    this.newestPair = pair.index;
    this.thumbnails += 2;
    if (this.metric === 'psnr') this.score(pair.index, lumaPsnr(r, d, this.geometry));
    this.runReady();
  }

  /**
   * No more pairs. With metric 'psnr' that is the end of the scores too: searches waiting for
   * later pairs run with what the rings hold. With metric 'score' they wait for the scores
   * (or end()), so where a report lands does not depend on when decoding ended.
   */
  endPairs(): void {
    this.pairsEnded = true;
    if (this.metric === 'psnr') this.finished = true;
    this.runReady();
  }

  /** After the backend, once per scored frame in index order (metric 'score' only). */
  observeScore(index: number, score: number): void {
    if (this.metric === 'psnr') throw new UsageError("drift monitor: metric 'psnr' scores the pairs itself; observeScore is for metric 'score'");
    if (!Number.isFinite(score)) return;
    this.score(index, score);
    this.runReady();
  }

  /** The end of the run: whatever is queued runs now. */
  end(): void {
    this.pairsEnded = true;
    this.finished = true;
    this.runReady();
  }

  /** Passes pairs through, observing each before it goes on; endPairs() when they end. */
  watchPairs(pairs: AsyncIterable<FramePair>): AsyncIterable<FramePair> {
    const monitor = this;
    return {
      async *[Symbol.asyncIterator]() {
        for await (const pair of pairs) {
          monitor.observePair(pair);
          yield pair;
        }
        monitor.endPairs();
      },
    };
  }

  /** An RxJS operator that observes each result's score (pick returns undefined to skip one); end() on completion. */
  watchScores<T extends { index: number }>(pick: (result: T) => number | undefined): MonoTypeOperatorFunction<T> {
    return (source) =>
      source.pipe(
        tap((result) => {
          const value = pick(result);
          if (value !== undefined) this.observeScore(result.index, value);
        }),
        finalize(() => this.end()),
      );
  }

  private score(index: number, value: number): void {
    if (index <= this.lastScoreIndex) return;
    this.lastScoreIndex = index;
    this.recent.push(value);
    if (this.recent.length > this.window) this.recent.shift();
    const n = this.collapseFrames;

    if (!this.isCollapsed) {
      if (this.normal.length < MIN_BASELINE) {
        this.pushNormal(value);
        return;
      }
      const baseline = median(this.normal);
      const margin = Math.max(this.minDrop, this.dropFraction * Math.abs(baseline));
      const side = value < baseline - margin ? -1 : value > baseline + margin ? 1 : 0;
      if (side === 0) {
        this.run = 0;
        this.pushNormal(value);
        return;
      }
      if (side !== this.runSide) this.run = 0;
      this.runSide = side;
      if (this.run === 0) this.runStart = index;
      if (++this.run < n) return;
      this.run = 0;
      if (side < 0) {
        this.isCollapsed = true;
        this.frozenBaseline = baseline;
        this.threshold = baseline - margin;
        this.collapsedFor = n;
        this.jobs.push({ trigger: 'collapse', start: this.runStart, triggerIndex: index, baseline });
      } else {
        // A rise as large: back from a level accepted as the new normal (see below).
        this.jobs.push({ trigger: 'recovery', start: this.runStart, triggerIndex: index, baseline });
        this.normal = this.recent.slice(-n);
      }
      return;
    }

    this.collapsedFor++;
    if (value >= this.threshold) {
      if (this.run === 0) this.runStart = index;
      this.run++;
      if (this.run >= n) {
        this.isCollapsed = false;
        this.run = 0;
        this.jobs.push({ trigger: 'recovery', start: this.runStart, triggerIndex: index, baseline: this.frozenBaseline });
        for (const v of this.recent.slice(-n)) this.pushNormal(v);
      }
    } else {
      this.run = 0;
      if (this.collapsedFor >= 2 * this.window) {
        // A lasting change of level (a permanent offset, a harder scene): the new normal.
        this.isCollapsed = false;
        this.normal = [...this.recent];
      }
    }
  }

  private pushNormal(value: number): void {
    this.normal.push(value);
    if (this.normal.length > this.window) this.normal.shift();
  }

  private runReady(): void {
    while (this.jobs.length > 0) {
      const job = this.jobs[0]!;
      const needed = job.start + this.after - 1 + Math.max(0, this.currentOffset + this.localRange);
      // In frame terms: the score at or past `needed` (its pairs are in by then in any run
      // that scores frames after decoding them), not whichever pair decoding reached first.
      if (!this.finished && (this.lastScoreIndex < needed || (!this.pairsEnded && this.newestPair < needed))) return;
      this.jobs.shift();
      this.analyse(job);
    }
  }

  private emit(job: Job, event: Omit<DriftEvent, 'trigger' | 'triggerIndex' | 'baseline'>): void {
    if (event.kind !== 'collapse') this.currentOffset = event.offset;
    this.eventCount++;
    this.onEvent?.({ ...event, trigger: job.trigger, triggerIndex: job.triggerIndex, baseline: job.baseline });
  }

  private analyse(job: Job): void {
    const cur = this.currentOffset;
    const n = this.localRange;
    let analysed = false;
    const collapse = () => {
      if (job.trigger === 'collapse') this.emit(job, { kind: 'collapse', atIndex: job.start, offset: cur, previousOffset: cur, gain: 0, analysed });
    };
    const refRing = this.refRing;
    const disRing = this.disRing;
    const geometry = this.geometry;
    if (!refRing || !disRing || !geometry) return collapse();

    // Pairs p whose distorted thumbnail and every reference thumbnail p + o are held.
    const offsets: number[] = [];
    for (let o = cur - n; o <= cur + n; o++) offsets.push(o);
    const rows: number[] = [];
    for (let p = Math.max(0, job.start - this.before); p < job.start + this.after; p++) {
      if (disRing.get(p) && offsets.every((o) => refRing.get(p + o))) rows.push(p);
    }
    // Keep the longest run of consecutive pairs containing (or nearest to) the start.
    const runs: number[][] = [];
    for (const p of rows) {
      const last = runs[runs.length - 1];
      if (last && last[last.length - 1] === p - 1) last.push(p);
      else runs.push([p]);
    }
    runs.sort((a, b) => b.length - a.length);
    const window = runs[0] ?? [];
    if (window.length < 3) return collapse();
    analysed = true;

    const m = offsets.length;
    const len = window.length;
    // prefix[k * (len + 1) + i]: Σ S over the first i rows at offset k.
    const prefix = new Float64Array(m * (len + 1));
    for (let k = 0; k < m; k++) {
      let sum = 0;
      for (let i = 0; i < len; i++) {
        const p = window[i]!;
        sum += lumaPsnr(disRing.get(p)!, refRing.get(p + offsets[k]!)!, geometry);
        prefix[k * (len + 1) + i + 1] = sum;
      }
    }
    const sum = (k: number, from: number, to: number) => prefix[k * (len + 1) + to]! - prefix[k * (len + 1) + from]!;
    const eps = 1e-9;
    const curK = n; // offsets[n] === cur

    // The best single offset (ties: the current one, then the nearest to it).
    let k0 = curK;
    for (let k = 0; k < m; k++) {
      const better = sum(k, 0, len) > sum(k0, 0, len) + eps;
      const tied = Math.abs(sum(k, 0, len) - sum(k0, 0, len)) <= eps;
      if (better || (tied && k0 !== curK && Math.abs(k - curK) < Math.abs(k0 - curK))) k0 = k;
    }
    const t0 = sum(k0, 0, len);

    // The best two-segment fit (ties: before = cur, then the smallest step, then t nearest the start).
    let best: { kb: number; ka: number; i: number; total: number } | undefined;
    for (let i = 1; i < len; i++) {
      for (let kb = 0; kb < m; kb++) {
        for (let ka = 0; ka < m; ka++) {
          if (ka === kb) continue;
          const total = sum(kb, 0, i) + sum(ka, i, len);
          if (!best || total > best.total + eps) {
            best = { kb, ka, i, total };
            continue;
          }
          if (total < best.total - eps) continue;
          const key = (c: { kb: number; ka: number; i: number }) => [
            c.kb === curK ? 0 : 1,
            Math.abs(c.ka - c.kb),
            Math.abs(window[c.i]! - job.start),
          ];
          const a = key({ kb, ka, i });
          const b = key(best);
          for (let j = 0; j < a.length; j++) {
            if (a[j]! !== b[j]!) {
              if (a[j]! < b[j]!) best = { kb, ka, i, total };
              break;
            }
          }
        }
      }
    }

    if (best) {
      // Where the fit differs from the single offset k0, and by how much per frame.
      const differs = (best.kb !== k0 ? best.i : 0) + (best.ka !== k0 ? len - best.i : 0);
      const gain = differs > 0 ? (best.total - t0) / differs : 0;
      if (differs >= 2 && gain >= this.minGain) {
        const from = offsets[best.kb]!;
        const to = offsets[best.ka]!;
        const step = to - from;
        const kind: DriftEventKind = from !== cur ? 'offset' : step === 1 ? 'dropped' : step === -1 ? 'repeated' : 'offset';
        return this.emit(job, { kind, atIndex: window[best.i]!, offset: to, previousOffset: cur, gain, analysed });
      }
    }
    if (k0 !== curK) {
      const gain = (t0 - sum(curK, 0, len)) / len;
      if (gain >= this.minGain) {
        return this.emit(job, { kind: 'offset', atIndex: window[0]!, offset: offsets[k0]!, previousOffset: cur, gain, analysed });
      }
    }
    return collapse();
  }
}

/** A DriftMonitor's watchPairs as a function. */
export function watchPairs(pairs: AsyncIterable<FramePair>, monitor: DriftMonitor): AsyncIterable<FramePair> {
  return monitor.watchPairs(pairs);
}
