/**
 * Offset search: which offset o in [-N, N] makes distorted frame i show reference frame
 * i + o? As easyVmaf does offline, every offset is scored by the mean luma PSNR of the
 * pairs it makes among the frames given (its overlap), and the best one wins.
 *
 * Decision rule:
 * - candidates: offsets whose overlap has at least min(minOverlap, the largest overlap
 *   possible) pairs (an offset seen on 2 frames cannot compete with one seen on 20);
 * - the winner is the offset of smallest |o| among those within `tieTolerance` dB of the
 *   best mean (then the positive one): exact ties, and content where every offset looks
 *   alike (a still picture, a slate, black), give 0 rather than an invented offset;
 * - runnerUp is the best candidate other than the winner; margin = winner − runnerUp in dB
 *   (clamped at 0), confidence = 1 − 10^(−margin/10): the share of the runner-up's mean
 *   squared error that the winner removes (0 dB → 0, 3 dB → 0.5, 10 dB → 0.9);
 *   `confident` is margin >= minMargin; `static` says every candidate is within
 *   tieTolerance of every other (nothing to align on: the offset is 0, confidence 0).
 * The runner-up is usually a neighbour of the winner (o ± 1); with slow motion its margin
 * is small even when the winner is right.
 */
import { UsageError } from '../errors.js';
import { gridStep, lumaPsnr, type Luma, type LumaGeometry } from './luma-psnr.js';

/** Grid samples per picture the search measures at most (the step is chosen to fit). */
export const DEFAULT_SEARCH_SAMPLES = 1 << 16;
/** dB: means this close count as tied (the smallest |offset| wins). */
export const DEFAULT_TIE_TOLERANCE_DB = 0.1;
/** dB over the runner-up for a result to count as confident. */
export const DEFAULT_MIN_MARGIN_DB = 1;
/** Pairs an offset must be measured on (clipped to what the inputs allow). */
export const DEFAULT_MIN_OVERLAP = 8;

export interface OffsetSearchOptions {
  /** N: offsets from -N to N are tried. */
  range: number;
  /** Grid step of the PSNR (1: every sample). Default: the smallest step leaving at most maxSamples. */
  step?: number | undefined;
  /** Samples per picture when the step is chosen (default 65536). */
  maxSamples?: number | undefined;
  /** Means within this many dB are tied (default 0.1). */
  tieTolerance?: number | undefined;
  /** Margin in dB for `confident` (default 1). */
  minMargin?: number | undefined;
  /** Pairs an offset must be measured on (default 8, clipped to the largest overlap possible). */
  minOverlap?: number | undefined;
}

export interface OffsetCandidate {
  /** Distorted frame i shows reference frame i + offset. */
  offset: number;
  /** Mean luma PSNR in dB over the pairs of this offset. */
  psnr: number;
  /** Pairs measured. */
  frames: number;
}

export interface OffsetSearchResult extends OffsetCandidate {
  /** The best candidate other than the winner, if any. */
  runnerUp: OffsetCandidate | undefined;
  /** Winner minus runner-up in dB, >= 0 (0 without a runner-up). */
  margin: number;
  /** 1 − 10^(−margin/10), in [0, 1). */
  confidence: number;
  /** margin >= minMargin. */
  confident: boolean;
  /** Every candidate is within tieTolerance of the others: nothing to align on. */
  static: boolean;
  /** Every offset measured, from -N to N (those with too little overlap left out). */
  candidates: OffsetCandidate[];
  /** The grid step the PSNR was measured on. */
  step: number;
}

function wholeNumber(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) throw new UsageError(`${name} must be a whole number >= ${min}, got ${String(value)}`);
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!(value >= 0) || !Number.isFinite(value)) throw new UsageError(`${name} must be a number >= 0, got ${String(value)}`);
  return value;
}

/** The margin in dB as a confidence in [0, 1): 1 − 10^(−margin/10). */
export function confidenceOfMargin(margin: number): number {
  return margin > 0 ? 1 - 10 ** (-margin / 10) : 0;
}

/** Applies the decision rule above to measured candidates. */
export function chooseOffset(
  candidates: readonly OffsetCandidate[],
  options: { tieTolerance?: number | undefined; minMargin?: number | undefined } = {},
): Omit<OffsetSearchResult, 'candidates' | 'step'> {
  const tie = nonNegative('tieTolerance', options.tieTolerance ?? DEFAULT_TIE_TOLERANCE_DB);
  const minMargin = nonNegative('minMargin', options.minMargin ?? DEFAULT_MIN_MARGIN_DB);
  if (candidates.length === 0) {
    return { offset: 0, psnr: Number.NaN, frames: 0, runnerUp: undefined, margin: 0, confidence: 0, confident: false, static: true };
  }
  let best = -Infinity;
  let worst = Infinity;
  for (const c of candidates) {
    best = Math.max(best, c.psnr);
    worst = Math.min(worst, c.psnr);
  }
  let winner: OffsetCandidate | undefined;
  for (const c of candidates) {
    if (c.psnr < best - tie) continue;
    if (!winner || Math.abs(c.offset) < Math.abs(winner.offset) || (Math.abs(c.offset) === Math.abs(winner.offset) && c.offset > winner.offset)) {
      winner = c;
    }
  }
  const chosen = winner!;
  let runnerUp: OffsetCandidate | undefined;
  for (const c of candidates) if (c !== chosen && (!runnerUp || c.psnr > runnerUp.psnr)) runnerUp = c;
  const margin = runnerUp ? Math.max(0, chosen.psnr - runnerUp.psnr) : 0;
  return {
    offset: chosen.offset,
    psnr: chosen.psnr,
    frames: chosen.frames,
    runnerUp,
    margin,
    confidence: confidenceOfMargin(margin),
    confident: margin >= minMargin,
    static: best - worst <= tie,
  };
}

/**
 * Finds the offset between the first frames of a reference and a distorted input: `ref`
 * and `dis` are their luma planes in order (ref[0] and dis[0] the first frames of each;
 * any lengths), all of `geometry`. Cost: (2N+1) × overlap PSNRs on the grid.
 */
export function searchOffset(ref: readonly Luma[], dis: readonly Luma[], geometry: LumaGeometry, options: OffsetSearchOptions): OffsetSearchResult {
  const range = wholeNumber('searchRange', options.range, 0);
  const maxSamples = wholeNumber('maxSamples', options.maxSamples ?? DEFAULT_SEARCH_SAMPLES, 1);
  const step = wholeNumber('step', options.step ?? gridStep(geometry.width, geometry.height, maxSamples), 1);
  const minOverlapAsked = wholeNumber('minOverlap', options.minOverlap ?? DEFAULT_MIN_OVERLAP, 1);
  // The largest overlap any offset in range can have; no offset needs more than that.
  const minOverlap = Math.max(1, Math.min(minOverlapAsked, ref.length, dis.length));

  const candidates: OffsetCandidate[] = [];
  for (let offset = -range; offset <= range; offset++) {
    const first = Math.max(0, -offset);
    const end = Math.min(dis.length, ref.length - offset);
    const frames = end - first;
    if (frames < minOverlap) continue;
    let sum = 0;
    for (let i = first; i < end; i++) sum += lumaPsnr(ref[i + offset]!, dis[i]!, geometry, step);
    candidates.push({ offset, psnr: sum / frames, frames });
  }
  return { ...chooseOffset(candidates, options), candidates, step };
}
