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
 * Checks first: frame sizes and bit depths must match (E_INPUT_MISMATCH), frames must be
 * at least minDimension a side (E_FRAME_TOO_SMALL); no pair at all is E_INPUT_EMPTY.
 * Both sources are read concurrently, and the next pair is read while the consumer works
 * on the current one. Skipped and unpaired frames are released here; the consumer releases
 * the frames of each pair it gets. pairFrames does not close the sources.
 */
import { InputError, UsageError } from '../errors.js';
import type { Frame, FrameFormat, FramePair, FrameSource } from '../types.js';

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
  /** Non-fatal conditions: inputs of different lengths. */
  onWarning?: ((message: string) => void) | undefined;
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
  if (refFormat.bitDepth !== disFormat.bitDepth) {
    throw new InputError(
      'E_INPUT_MISMATCH',
      dis.label,
      `bit depth ${disFormat.bitDepth} does not match the reference ${ref.label} (${refFormat.bitDepth}-bit); ` +
        'both inputs must have the same bit depth',
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

/** Both next frames, read concurrently; a frame read alongside a failure is released. */
async function nextPair(ri: AsyncIterator<Frame>, di: AsyncIterator<Frame>): Promise<[Result, Result]> {
  const [a, b] = await Promise.allSettled([ri.next(), di.next()]);
  if (a.status === 'rejected' || b.status === 'rejected') {
    if (a.status === 'fulfilled' && !a.value.done) a.value.value.release();
    if (b.status === 'fulfilled' && !b.value.done) b.value.value.release();
    throw a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason;
  }
  return [a.value, b.value];
}

function releasePair(pending: Promise<[Result, Result]>): void {
  pending.then(
    ([a, b]) => {
      if (!a.done) a.value.release();
      if (!b.done) b.value.release();
    },
    () => {},
  );
}

export async function* pairFrames(
  ref: FrameSource,
  dis: FrameSource,
  options: PairFramesOptions = {},
): AsyncGenerator<FramePair, void, undefined> {
  const skipRef = count('frameSkipRef', options.frameSkipRef, 0);
  const skipDist = count('frameSkipDist', options.frameSkipDist, 0);
  const frameCnt = count('frameCnt', options.frameCnt, 0);
  const subsample = count('subsample', options.subsample, 1);
  const minDimension = count('minDimension', options.minDimension, DEFAULT_MIN_DIMENSION);

  // Formats first, the reference's error before the distorted one's.
  const [rf, df] = await Promise.allSettled([ref.format(), dis.format()]);
  if (rf.status === 'rejected') throw rf.reason;
  if (df.status === 'rejected') throw df.reason;
  checkFormats(ref, rf.value, dis, df.value, minDimension);

  const ri = ref[Symbol.asyncIterator]();
  const di = dis[Symbol.asyncIterator]();
  let pending: Promise<[Result, Result]> | undefined;
  try {
    const [refSkipped, disSkipped] = await Promise.all([skipFrames(ri, skipRef), skipFrames(di, skipDist)]);
    const skipNote = (skipped: number, asked: number) => (asked > 0 ? ` (${skipped} skipped)` : '');
    const emptyError = (source: FrameSource, skipped: number, asked: number) =>
      new InputError(
        'E_INPUT_EMPTY',
        source.label,
        asked > 0
          ? `no frames left to score: it has ${plural(skipped, 'frame')}, and the first ${asked} are skipped`
          : 'has no frames',
      );

    let index = 0;
    pending = nextPair(ri, di);
    while (pending) {
      const [r, d] = await pending;
      pending = undefined;
      if (r.done || d.done) {
        if (!r.done) r.value.release();
        if (!d.done) d.value.release();
        if (index === 0) {
          if (r.done) throw emptyError(ref, refSkipped, skipRef);
          throw emptyError(dis, disSkipped, skipDist);
        }
        if (r.done && d.done) return;
        const [shorter, longer, shorterSkipped, longerSkipped, longerIt] = r.done
          ? [ref, dis, refSkipped, disSkipped, di]
          : [dis, ref, disSkipped, refSkipped, ri];
        const shorterCount = shorterSkipped + index;
        let longerText: string;
        if (options.countRemaining === false) {
          longerText = `more than ${longerSkipped + index}`;
        } else {
          const rest = await drain(longerIt);
          const total = longerSkipped + index + 1 + rest.frames;
          longerText = rest.failed ? `at least ${total}` : String(total);
        }
        options.onWarning?.(
          `${shorter.label} ended before ${longer.label}: ${shorter.label} has ${plural(shorterCount, 'frame')}` +
            `${skipNote(shorterSkipped, shorter === ref ? skipRef : skipDist)}, ${longer.label} has ${longerText}` +
            `${skipNote(longerSkipped, longer === ref ? skipRef : skipDist)}; ` +
            `scored the first ${plural(index, 'frame')} of each`,
        );
        return;
      }
      // Read the next pair while the consumer works on this one.
      if (frameCnt === 0 || index + 1 < frameCnt) {
        pending = nextPair(ri, di);
        // Its failure is re-thrown when the next pair is awaited; until then (the consumer
        // may be busy with this pair for a while) it must not count as unhandled.
        pending.catch(() => {});
      }
      const pair: FramePair = { index, ref: r.value, dis: d.value, scored: subsample <= 1 || index % subsample === 0 };
      index++;
      yield pair;
    }
  } finally {
    // The consumer stopped early, or an error: free what was read ahead, stop the readers.
    if (pending) releasePair(pending);
    ri.return?.()?.catch(() => {});
    di.return?.()?.catch(() => {});
  }
}
