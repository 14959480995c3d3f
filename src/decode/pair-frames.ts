/**
 * pairFrames: the reference and distorted frames side by side, with libvmaf 3.2.0's CLI
 * semantics (tools/vmaf.c, src/libvmaf.c):
 *
 * - frameSkipRef / frameSkipDist (--frame_skip_ref / --frame_skip_dist): the first N frames
 *   of that input are read and dropped before anything else. Skipped frames get no index.
 * - The output index (libvmaf's frameNum) counts the pairs read after the skips, from 0.
 * - frameCnt (--frame_cnt): at most this many pairs are read (0 or absent: all). It counts
 *   every pair read, subsampled-out ones included.
 * - subsample (--subsample N): every pair is still read and yielded (libvmaf reads every
 *   picture and computes motion, a PREV_REF extractor, on all of them), but only pairs
 *   with index % N === 0 are scored (VIF, ADM, model) and logged; the others come with
 *   `scored: false`. Counting starts at the first pair after the skips (index 0 is scored),
 *   and logged frames keep their index: 0, N, 2N, ...
 * - Inputs of different lengths are not an error: pairing stops at the shorter one, and
 *   onWarning says so with both frame counts (libvmaf prints '"a" ended before "b"').
 *
 * Checks first: frame sizes must match (E_INPUT_MISMATCH); a distorted input of lower bit
 * depth than the reference is widened to the reference's depth as ffmpeg's format filter
 * does, with a warning (bit-depth.ts), a higher one is E_INPUT_MISMATCH; frames must be at
 * least minDimension a side (E_FRAME_TOO_SMALL); no pair at all is E_INPUT_EMPTY. With
 * planes 'all', every frame must carry both chroma planes (a FrameSource given by the
 * caller may not): else an InputError naming the input and the frame.
 * Both sources are read concurrently, and the next pair is read while the consumer works
 * on the current one. Skipped and unpaired frames are released here; the consumer releases
 * the frames of each pair it gets. pairFrames does not close the sources.
 */
import { InputError, UsageError } from '../errors.js';
import type { Frame, FrameFormat, FrameGroup, FramePair, FrameSource, PlaneSelection } from '../types.js';
import { matchReferenceDepth, matchedFormat } from './bit-depth.js';
import { assertChromaAvailable, assertFrameChroma, checkPlaneSelection } from './planes.js';

export interface PairFramesOptions {
  /** Frames of the reference dropped before pairing (libvmaf --frame_skip_ref). */
  frameSkipRef?: number | undefined;
  /** Frames of the distorted input dropped before pairing (--frame_skip_dist). */
  frameSkipDist?: number | undefined;
  /** Pairs read at most, subsampled-out ones included (--frame_cnt); 0 or absent: all. */
  frameCnt?: number | undefined;
  /** Score every Nth pair (--subsample); 0, 1 or absent: every pair. */
  subsample?: number | undefined;
  /** Smallest width and height accepted (default 32). */
  minDimension?: number | undefined;
  /** Non-fatal conditions: inputs of different lengths, a distorted input widened to the reference's bit depth. */
  onWarning?: ((message: string) => void) | undefined;
  /**
   * 'all': every frame must carry both chroma planes (checked; a 4:0:0 input is an error).
   * Default 'luma': frames are taken as they come. (The planes are read by the sources:
   * openFrameSource's `planes`.)
   */
  planes?: PlaneSelection | undefined;
  /**
   * When the inputs differ in length, read the rest of the longer one to count its
   * frames for the warning (default true). false: the warning says "more than N".
   */
  countRemaining?: boolean | undefined;
}

export const DEFAULT_MIN_DIMENSION = 32;

type Result = IteratorResult<Frame, unknown>;

function count(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new UsageError(`${name} must be a whole number >= 0, got ${String(value)}`);
  return value;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function size(f: FrameFormat): string {
  return `${f.width}x${f.height}`;
}

/** Checks that the two inputs can be compared; throws the InputError that says why not. */
export function checkFormats(ref: FrameSource, refFormat: FrameFormat, dis: FrameSource, disFormat: FrameFormat, minDimension = DEFAULT_MIN_DIMENSION): void {
  if (refFormat.width !== disFormat.width || refFormat.height !== disFormat.height) {
    throw new InputError(
      'E_INPUT_MISMATCH',
      dis.label,
      `frame size ${size(disFormat)} does not match the reference ${ref.label} (${size(refFormat)}); ` +
        `scale the distorted video to ${size(refFormat)} (--scale) or give inputs of the same size`,
    );
  }
  if (refFormat.bitDepth < disFormat.bitDepth) {
    throw new InputError(
      'E_INPUT_MISMATCH',
      dis.label,
      `bit depth ${disFormat.bitDepth} is higher than the reference ${ref.label}'s (${refFormat.bitDepth}-bit): ` +
        'a distorted input of lower depth is converted up to the reference\'s, but never down, which would lose ' +
        'what the reference lacks; give a reference of at least the distorted input\'s depth',
    );
  }
  if (refFormat.bitDepth !== disFormat.bitDepth) {
    throw new InputError(
      'E_INPUT_MISMATCH',
      dis.label,
      `bit depth ${disFormat.bitDepth} does not match the reference ${ref.label} (${refFormat.bitDepth}-bit); ` +
        'convert it to the reference\'s depth first (groupFrames and the score functions do)',
    );
  }
  for (const [source, format] of [[ref, refFormat], [dis, disFormat]] as const) {
    if (format.width < minDimension || format.height < minDimension) {
      throw new InputError(
        'E_FRAME_TOO_SMALL',
        source.label,
        `frames of ${size(format)} are too small: VMAF needs at least ${minDimension}x${minDimension} ` +
          `(${minDimension} pixels in width and in height)`,
      );
    }
  }
}

/** Reads and releases up to `n` frames; returns how many there were. */
async function skipFrames(it: AsyncIterator<Frame>, n: number): Promise<number> {
  let skipped = 0;
  while (skipped < n) {
    const r = await it.next();
    if (r.done) break;
    r.value.release();
    skipped++;
  }
  return skipped;
}

/** Reads and releases the rest; returns how many frames there were (and whether it stopped on an error). */
async function drain(it: AsyncIterator<Frame>): Promise<{ frames: number; failed: boolean }> {
  let frames = 0;
  try {
    for (;;) {
      const r = await it.next();
      if (r.done) return { frames, failed: false };
      r.value.release();
      frames++;
    }
  } catch {
    return { frames, failed: true };
  }
}

/** One step: the reference's next frame and each active distorted input's, read concurrently. */
type Step = [Result, Array<Result | undefined>];

/**
 * The next frame of the reference and of every active distorted input, read concurrently;
 * on a failure the frames read alongside are released and the first failure (the
 * reference's, then the distorted inputs' in order) is thrown.
 */
async function nextStep(ri: AsyncIterator<Frame>, dis: ReadonlyArray<AsyncIterator<Frame> | undefined>): Promise<Step> {
  const settled = await Promise.allSettled([ri.next(), ...dis.map((it) => (it ? it.next() : Promise.resolve(undefined)))]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    for (const s of settled) if (s.status === 'fulfilled' && s.value && !s.value.done) s.value.value.release();
    throw failed.reason;
  }
  const values = settled.map((s) => (s as PromiseFulfilledResult<Result | undefined>).value);
  return [values[0]!, values.slice(1)];
}

/**
 * With every plane asked for: each frame of a step must carry both chroma planes (a caller's
 * FrameSource may not). On failure the step's frames are released and the error thrown.
 */
function checkStepChroma(ref: FrameSource, dis: readonly FrameSource[], r: Frame, ds: Array<Result | undefined>): void {
  try {
    assertFrameChroma(ref.label, r);
    ds.forEach((d, k) => d && !d.done && assertFrameChroma(dis[k]!.label, d.value));
  } catch (err) {
    r.release();
    for (const d of ds) if (d && !d.done) d.value.release();
    throw err;
  }
}

function releaseStep(pending: Promise<Step>): void {
  pending.then(
    ([r, ds]) => {
      if (!r.done) r.value.release();
      for (const d of ds) if (d && !d.done) d.value.release();
    },
    () => {},
  );
}

export async function* pairFrames(
  ref: FrameSource,
  dis: FrameSource,
  options: PairFramesOptions = {},
): AsyncGenerator<FramePair, void, undefined> {
  for await (const group of groupFrames(ref, [dis], options)) {
    yield { index: group.index, ref: group.ref, dis: group.dis[0]!, scored: group.scored !== false };
  }
}

export interface GroupFramesOptions extends Omit<PairFramesOptions, 'frameSkipDist'> {
  /** Frames dropped from the start of each distorted input: one count for all, or one per input. */
  frameSkipDist?: number | ReadonlyArray<number | undefined> | undefined;
}

/**
 * pairFrames for one reference and several distorted inputs (a ladder's renditions): the
 * reference is read once and each of its frames is grouped with the frame of every
 * distorted input at the same position. pairFrames is this with one distorted input, and
 * each distorted input of a group sees exactly what pairFrames would give it alone:
 *
 * - frameSkipRef, frameCnt, subsample and minDimension as in pairFrames; frameSkipDist
 *   applies to every distorted input, or one count per input;
 * - formats are checked for every input first (the reference's error first, then the
 *   distorted inputs' in order); an input with no frame at all is E_INPUT_EMPTY;
 * - a distorted input shorter than the reference ends alone: later groups carry undefined
 *   for it, the others go on; grouping stops when the reference ends or the last distorted
 *   input does. Each input of another length than the reference gets pairFrames' warning,
 *   with both counts (the reference's once it is known: at the end of the run).
 *
 * Every input is read concurrently, and the next group is read while the consumer works
 * on the current one. The consumer releases the frames of each group it gets; skipped,
 * unpaired and read-ahead frames are released here. groupFrames does not close the sources.
 */
export async function* groupFrames(
  ref: FrameSource,
  dis: readonly FrameSource[],
  options: GroupFramesOptions = {},
): AsyncGenerator<FrameGroup, void, undefined> {
  if (dis.length === 0) throw new UsageError('groupFrames needs at least one distorted input');
  const skipRef = count('frameSkipRef', options.frameSkipRef, 0);
  const skipDistOption = options.frameSkipDist;
  const skipDist = dis.map((_, k) =>
    count('frameSkipDist', typeof skipDistOption === 'object' && skipDistOption !== null ? skipDistOption[k] : skipDistOption, 0),
  );
  const frameCnt = count('frameCnt', options.frameCnt, 0);
  const subsample = count('subsample', options.subsample, 1);
  const minDimension = count('minDimension', options.minDimension, DEFAULT_MIN_DIMENSION);

  checkPlaneSelection('groupFrames', options.planes);
  const planes = options.planes ?? 'luma';

  // Formats first, the reference's error before the distorted ones'.
  const formats = await Promise.allSettled([ref.format(), ...dis.map((d) => d.format())]);
  for (const f of formats) if (f.status === 'rejected') throw f.reason;
  const [rf, ...dfs] = formats.map((f) => (f as PromiseFulfilledResult<FrameFormat>).value);
  const sources = [ref, ...dis];
  [rf!, ...dfs].forEach((f, k) => assertChromaAvailable(sources[k]!.label, f, planes));
  // Lower-depth distorted inputs are widened to the reference's depth (with a warning).
  dis.forEach((d, k) => checkFormats(ref, rf!, d, matchedFormat(rf!, dfs[k]!), minDimension));
  const disSources = dis.map((d, k) => matchReferenceDepth(ref, rf!, d, dfs[k]!, options.onWarning));

  const ri = ref[Symbol.asyncIterator]();
  const disIts: Array<AsyncIterator<Frame> | undefined> = disSources.map((d) => d[Symbol.asyncIterator]());
  const all = [ri, ...disIts] as AsyncIterator<Frame>[];
  let pending: Promise<Step> | undefined;
  try {
    const [refSkipped, ...disSkipped] = await Promise.all([skipFrames(ri, skipRef), ...disIts.map((it, k) => skipFrames(it!, skipDist[k]!))]);
    const skipNote = (skipped: number, asked: number) => (asked > 0 ? ` (${skipped} skipped)` : '');
    const emptyError = (source: FrameSource, skipped: number, asked: number) =>
      new InputError(
        'E_INPUT_EMPTY',
        source.label,
        asked > 0
          ? `no frames left to score: it has ${plural(skipped, 'frame')}, and the first ${asked} are skipped`
          : 'has no frames',
      );
    const refNote = skipNote(refSkipped!, skipRef);
    /** pairFrames' warning for inputs of different lengths. */
    const warn = (shorter: FrameSource, shorterText: string, longer: FrameSource, longerText: string, paired: number) =>
      options.onWarning?.(
        `${shorter.label} ended before ${longer.label}: ${shorter.label} has ${shorterText}, ${longer.label} has ${longerText}; ` +
          `scored the first ${plural(paired, 'frame')} of each`,
      );
    /** The frames of a longer input: read to its end (unless countRemaining is false). */
    const longerCount = async (it: AsyncIterator<Frame>, before: number): Promise<string> => {
      if (options.countRemaining === false) return `more than ${before - 1}`;
      const rest = await drain(it);
      return rest.failed ? `at least ${before + rest.frames}` : String(before + rest.frames);
    };
    // Distorted inputs that ended before the reference: warned about once its count is known.
    const endedEarly: Array<{ k: number; paired: number }> = [];
    const warnEndedEarly = (refText: string) => {
      for (const { k, paired } of endedEarly) {
        warn(dis[k]!, `${plural(disSkipped[k]! + paired, 'frame')}${skipNote(disSkipped[k]!, skipDist[k]!)}`, ref, `${refText}${refNote}`, paired);
      }
    };

    let index = 0;
    pending = nextStep(ri, disIts);
    while (pending) {
      const [r, ds] = await pending;
      pending = undefined;
      if (r.done) {
        for (const d of ds) if (d && !d.done) d.value.release();
        if (index === 0) throw emptyError(ref, refSkipped!, skipRef);
        warnEndedEarly(String(refSkipped! + index));
        // The reference is the shorter one for every input still going.
        for (let k = 0; k < ds.length; k++) {
          const d = ds[k];
          if (!d || d.done) continue;
          const longerText = await longerCount(disIts[k]!, disSkipped[k]! + index + 1);
          warn(ref, `${plural(refSkipped! + index, 'frame')}${refNote}`, dis[k]!, `${longerText}${skipNote(disSkipped[k]!, skipDist[k]!)}`, index);
        }
        return;
      }
      if (planes === 'all') checkStepChroma(ref, disSources, r.value, ds);
      const endedNow = ds.flatMap((d, k) => (d?.done ? [k] : []));
      if (index === 0 && endedNow.length > 0) {
        r.value.release();
        for (const d of ds) if (d && !d.done) d.value.release();
        const k = endedNow[0]!;
        throw emptyError(dis[k]!, disSkipped[k]!, skipDist[k]!);
      }
      for (const k of endedNow) {
        disIts[k] = undefined;
        endedEarly.push({ k, paired: index });
      }
      if (disIts.every((it) => it === undefined)) {
        // Every distorted input has ended: the reference is the longer one.
        r.value.release();
        warnEndedEarly(await longerCount(ri, refSkipped! + index + 1));
        return;
      }
      // Read the next group while the consumer works on this one.
      if (frameCnt === 0 || index + 1 < frameCnt) {
        pending = nextStep(ri, disIts);
        // Its failure is re-thrown when the next group is awaited; until then (the consumer
        // may be busy with this group for a while) it must not count as unhandled.
        pending.catch(() => {});
      } else if (endedEarly.length > 0) {
        warnEndedEarly(`at least ${refSkipped! + index + 1}`);
      }
      const group: FrameGroup = {
        index,
        ref: r.value,
        dis: ds.map((d) => (d && !d.done ? d.value : undefined)),
        scored: subsample <= 1 || index % subsample === 0,
      };
      index++;
      yield group;
    }
  } finally {
    // The consumer stopped early, or an error: free what was read ahead, stop the readers.
    if (pending) releaseStep(pending);
    for (const it of all) it.return?.()?.catch(() => {});
  }
}
