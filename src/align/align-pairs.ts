/**
 * alignPairs: pairFrames with the distorted input aligned on the reference.
 *
 * The alignment is an offset o: distorted frame i shows reference frame i + o (counting
 * after any frameSkipRef / frameSkipDist). It becomes skip counts for pairFrames: o > 0
 * skips o more reference frames, o < 0 skips |o| more distorted frames. Everything else
 * (indexes from 0, frameCnt, subsample, the different-lengths warning, E_INPUT_EMPTY,
 * format checks, read-ahead, releasing skipped and unpaired frames) is pairFrames'.
 *
 * - mode: a number → that offset, nothing buffered; onReport gets { mode: 'fixed' }.
 * - mode: 'auto' → the first K frames of each input (after the user's skips; K =
 *   searchFrames, default 2N + 8) are read and copied into memory owned here, each source
 *   frame released as soon as it is copied (so the sources' pools, however small, never
 *   block); searchOffset() picks o in [-N, N]; onReport gets the result; the copies are
 *   then replayed to pairFrames ahead of the rest of each input, which passes through
 *   untouched (no copy). Copies are ordinary Frames whose release() only marks them done.
 *   Memory: 2·K luma planes, once, at the start: K shrinks to fit maxBufferBytes (default
 *   256 MiB) but not below N + 8, so that every offset is measured on 8 pairs or more
 *   (1080p 8-bit, N = 10: K = 28, 116 MB; 2160p 10-bit: K = 18, 600 MB, over the budget).
 *   Frames the offset makes unneeded are dropped by pairFrames' skip as usual.
 * Like pairFrames, alignPairs never closes the sources.
 */
import { UsageError } from '../errors.js';
import { checkFormats, DEFAULT_MIN_DIMENSION, pairFrames, type PairFramesOptions } from '../decode/pair-frames.js';
import type { Frame, FrameFormat, FramePair, FrameSource } from '../types.js';
import { DEFAULT_MIN_OVERLAP, searchOffset, type OffsetCandidate, type OffsetSearchOptions, type OffsetSearchResult } from './offset-search.js';

export type AlignMode = 'auto' | number;

export const DEFAULT_SEARCH_RANGE = 10;
export const DEFAULT_MAX_BUFFER_BYTES = 256 * 1024 * 1024;

export interface AlignmentReport {
  /** Distorted frame i shows reference frame i + offset (frames counted after the user's skips). */
  offset: number;
  /** 'fixed': the offset was given; 'auto': it was searched. */
  mode: 'fixed' | 'auto';
  /** Mean luma PSNR in dB at the offset over the frames searched (auto only). */
  psnr: number | undefined;
  /** In [0, 1]: 1 for a fixed offset; for a search, 1 − 10^(−margin/10) (see offset-search). */
  confidence: number;
  /** Margin in dB over the runner-up reached the threshold (always true when fixed). */
  confident: boolean;
  /** Every offset looked alike (a still picture): the offset is 0 by default, not by evidence. */
  static: boolean;
  /** The best other offset (auto only). */
  runnerUp: OffsetCandidate | undefined;
  /** What pairFrames is given: the user's skips plus the offset's. */
  frameSkipRef: number;
  frameSkipDist: number;
  /** The full search result (auto only), with every candidate's mean PSNR. */
  search: OffsetSearchResult | undefined;
  /** Frames of each input the search saw (auto only; fewer than searchFrames when an input is shorter). */
  framesSearched: { ref: number; dis: number } | undefined;
}

export interface AlignPairsOptions extends PairFramesOptions {
  /** 'auto' (default): search the offset; a whole number: apply that offset. */
  mode?: AlignMode | undefined;
  /** N: offsets from -N to N are searched (default 10). */
  searchRange?: number | undefined;
  /** K: frames of each input buffered and searched (default 2N + 8). */
  searchFrames?: number | undefined;
  /** Bytes the 2·K buffered luma planes may take; K shrinks to fit, not below N + 8 (default 256 MiB). */
  maxBufferBytes?: number | undefined;
  /** Fine-tuning of the search (grid step, tie tolerance, margins). */
  search?: Omit<OffsetSearchOptions, 'range'> | undefined;
  /** Called once, before the first pair, with the offset used. */
  onReport?: ((report: AlignmentReport) => void) | undefined;
}

function wholeNumber(name: string, value: number | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min) throw new UsageError(`${name} must be a whole number >= ${min}, got ${String(value)}`);
  return value;
}

/** The skip counts that apply offset `o` on top of the user's skips. */
export function skipsForOffset(offset: number, frameSkipRef = 0, frameSkipDist = 0): { frameSkipRef: number; frameSkipDist: number } {
  return { frameSkipRef: frameSkipRef + Math.max(0, offset), frameSkipDist: frameSkipDist + Math.max(0, -offset) };
}

/** K for these options and this format (see AlignPairsOptions). */
export function searchFramesFor(format: FrameFormat, range: number, searchFrames?: number, maxBufferBytes = DEFAULT_MAX_BUFFER_BYTES): number {
  const asked = wholeNumber('searchFrames', searchFrames, 2 * range + 8, 1);
  const bytesPerFrame = format.width * format.height * (format.bitDepth > 8 ? 2 : 1);
  const fit = Math.floor(maxBufferBytes / (2 * bytesPerFrame));
  return Math.min(asked, Math.max(fit, range + DEFAULT_MIN_OVERLAP));
}

export async function* alignPairs(ref: FrameSource, dis: FrameSource, options: AlignPairsOptions = {}): AsyncGenerator<FramePair, void, undefined> {
  const mode = options.mode ?? 'auto';
  const userSkipRef = wholeNumber('frameSkipRef', options.frameSkipRef, 0);
  const userSkipDist = wholeNumber('frameSkipDist', options.frameSkipDist, 0);
  const { onReport, mode: _mode, searchRange: _range, searchFrames: _frames, maxBufferBytes: _bytes, search: _search, ...pairOptions } = options;

  if (mode !== 'auto') {
    if (!Number.isInteger(mode)) throw new UsageError(`align: the offset must be a whole number of frames or 'auto', got ${String(mode)}`);
    const skips = skipsForOffset(mode, userSkipRef, userSkipDist);
    onReport?.({
      offset: mode, mode: 'fixed', psnr: undefined, confidence: 1, confident: true, static: false, runnerUp: undefined,
      ...skips, search: undefined, framesSearched: undefined,
    });
    yield* pairFrames(ref, dis, { ...pairOptions, ...skips });
    return;
  }

  const range = wholeNumber('searchRange', options.searchRange, DEFAULT_SEARCH_RANGE);
  const maxBufferBytes = options.maxBufferBytes ?? DEFAULT_MAX_BUFFER_BYTES;
  const [rf, df] = await Promise.allSettled([ref.format(), dis.format()]);
  if (rf.status === 'rejected') throw rf.reason;
  if (df.status === 'rejected') throw df.reason;
  checkFormats(ref, rf.value, dis, df.value, options.minDimension ?? DEFAULT_MIN_DIMENSION);
  const k = searchFramesFor(rf.value, range, options.searchFrames, maxBufferBytes);

  const ri = ref[Symbol.asyncIterator]();
  const di = dis[Symbol.asyncIterator]();
  const [rb, db] = await Promise.allSettled([prefetch(ri, userSkipRef, k), prefetch(di, userSkipDist, k)]);
  if (rb.status === 'rejected' || db.status === 'rejected') {
    ri.return?.()?.catch(() => {});
    di.return?.()?.catch(() => {});
    throw rb.status === 'rejected' ? rb.reason : (db as PromiseRejectedResult).reason;
  }
  const refBuf = rb.value;
  const disBuf = db.value;

  let offset = 0;
  // An empty input: no search; pairFrames raises E_INPUT_EMPTY with its own message.
  try {
    if (refBuf.frames.length > 0 && disBuf.frames.length > 0) {
      const search = searchOffset(
        refBuf.frames.map((f) => f.luma),
        disBuf.frames.map((f) => f.luma),
        rf.value,
        { ...options.search, range },
      );
      offset = search.offset;
      onReport?.({
        offset, mode: 'auto', psnr: search.psnr, confidence: search.confidence, confident: search.confident, static: search.static,
        runnerUp: search.runnerUp, ...skipsForOffset(offset, userSkipRef, userSkipDist), search,
        framesSearched: { ref: refBuf.frames.length, dis: disBuf.frames.length },
      });
    }
  } catch (err) {
    ri.return?.()?.catch(() => {});
    di.return?.()?.catch(() => {});
    throw err;
  }
  // pairFrames skips the placeholders of the frames skipped here, then the offset's frames.
  const skips = skipsForOffset(offset, refBuf.skipped, disBuf.skipped);
  yield* pairFrames(new ReplaySource(ref, ri, refBuf), new ReplaySource(dis, di, disBuf), { ...pairOptions, ...skips });
}

interface Prefetched {
  /** Frames read and released before the buffer (the user's skips). */
  skipped: number;
  /** Copies of the next frames. */
  frames: Frame[];
  /** The input ended while prefetching. */
  ended: boolean;
}

/** A copy of a frame in memory owned by the caller; the source frame is released. */
function copyFrame(frame: Frame): Frame {
  let luma: Uint8Array | Uint16Array;
  let chroma: Frame['chroma'];
  try {
    luma = frame.luma.slice();
    if (frame.chroma) chroma = [frame.chroma[0].slice(), frame.chroma[1].slice()];
  } finally {
    frame.release();
  }
  const copy: Frame = { index: frame.index, format: frame.format, luma, release() {} };
  if (chroma) copy.chroma = chroma;
  if (frame.pts !== undefined) copy.pts = frame.pts;
  return copy;
}

async function prefetch(it: AsyncIterator<Frame>, skip: number, k: number): Promise<Prefetched> {
  const out: Prefetched = { skipped: 0, frames: [], ended: false };
  while (out.skipped < skip) {
    const r = await it.next();
    if (r.done) return { ...out, ended: true };
    r.value.release();
    out.skipped++;
  }
  while (out.frames.length < k) {
    const r = await it.next();
    if (r.done) return { ...out, ended: true };
    out.frames.push(copyFrame(r.value));
  }
  return out;
}

/**
 * A FrameSource that yields `skipped` placeholders (frames already read and released,
 * standing in for them so that pairFrames counts its skips and lengths as usual; they have
 * no samples and are only ever skipped), then the prefetched copies, then the rest of the
 * input through the iterator already open on it. close() does nothing: the caller closes
 * the real source.
 */
class ReplaySource implements FrameSource {
  readonly label: string;
  private iterated = false;

  constructor(
    private readonly source: FrameSource,
    private readonly it: AsyncIterator<Frame>,
    private readonly prefetched: Prefetched,
  ) {
    this.label = source.label;
  }

  format(): Promise<FrameFormat> {
    return this.source.format();
  }

  async close(): Promise<void> {}

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    if (this.iterated) throw new Error(`${this.label}: a FrameSource can be iterated only once`);
    this.iterated = true;
    const { it, prefetched } = this;
    const format = this.source.format();
    let placeholders = prefetched.skipped;
    let next = 0;
    let finished = false;
    const done = (): IteratorResult<Frame> => ({ done: true, value: undefined });
    return {
      next: async (): Promise<IteratorResult<Frame>> => {
        if (finished) return done();
        if (placeholders > 0) {
          const index = prefetched.skipped - placeholders--;
          const f = await format;
          return { done: false, value: { index, format: f, luma: f.bitDepth > 8 ? new Uint16Array(0) : new Uint8Array(0), release() {} } };
        }
        if (next < prefetched.frames.length) {
          const frame = prefetched.frames[next]!;
          prefetched.frames[next++] = undefined as unknown as Frame; // let the copy go once it is handed out
          return { done: false, value: frame };
        }
        if (prefetched.ended) {
          finished = true;
          return done();
        }
        return it.next();
      },
      return: async (): Promise<IteratorResult<Frame>> => {
        finished = true;
        prefetched.frames.length = 0;
        await it.return?.();
        return done();
      },
    };
  }
}

/**
 * alignSources: alignment for a ladder (one reference, several distorted inputs read by
 * groupFrames). Each distorted input k gets its own offset o_k (searched, given, or 0 where
 * its mode is undefined); the reference, shared by all of them, is skipped by the largest
 * positive offset P = max(0, o_k), and input k by P − o_k on top of its own skip, so that
 * its frame i shows reference frame i + o_k. With one input this is alignPairs' pairing
 * exactly (P = max(0, o)); with several, an input whose offset is below P starts P − o_k
 * frames later than it would alone: its results are those of its single-pair run with the
 * skips of its report (frameSkipRef, frameSkipDist).
 *
 * The search reads the first K frames of the reference and of every input searched
 * (after the user's skips), copies them and releases the originals at once, then replays
 * them ahead of the rest (as alignPairs). The sources returned are to be read once (by
 * groupFrames, with the skips returned); closing them does nothing: the caller closes the
 * originals. An input with no frame after its skip gets no search and no report (offset 0:
 * groupFrames reports it empty).
 */
export interface AlignSourcesOptions extends Pick<AlignPairsOptions, 'searchRange' | 'searchFrames' | 'maxBufferBytes' | 'search' | 'minDimension'> {
  /** Per distorted input: 'auto', an offset, or undefined (not aligned: offset 0, no report). */
  modes: ReadonlyArray<AlignMode | undefined>;
  /** The user's skips, applied first. */
  frameSkipRef?: number | undefined;
  frameSkipDist?: ReadonlyArray<number | undefined> | undefined;
}

export interface AlignedSources {
  ref: FrameSource;
  dis: FrameSource[];
  /** What groupFrames is given (on the sources returned). */
  frameSkipRef: number;
  frameSkipDist: number[];
  /** Per distorted input: its alignment, or undefined (not aligned, or empty). */
  reports: Array<AlignmentReport | undefined>;
}

export async function alignSources(ref: FrameSource, dis: readonly FrameSource[], options: AlignSourcesOptions): Promise<AlignedSources> {
  const { modes } = options;
  if (modes.length !== dis.length) throw new UsageError(`alignSources: ${modes.length} modes for ${dis.length} distorted inputs`);
  for (const mode of modes) {
    if (mode !== undefined && mode !== 'auto' && !Number.isInteger(mode)) {
      throw new UsageError(`align: the offset must be a whole number of frames or 'auto', got ${String(mode)}`);
    }
  }
  const userSkipRef = wholeNumber('frameSkipRef', options.frameSkipRef, 0);
  const userSkipDist = dis.map((_, k) => wholeNumber('frameSkipDist', options.frameSkipDist?.[k], 0));
  const offsets = modes.map((mode) => (typeof mode === 'number' ? mode : 0));
  const searched: Array<Pick<AlignmentReport, 'psnr' | 'confidence' | 'confident' | 'static' | 'runnerUp' | 'search' | 'framesSearched'> | undefined> = dis.map(() => undefined);
  const auto = modes.flatMap((mode, k) => (mode === 'auto' ? [k] : []));

  let refSource = ref;
  const disSources = [...dis];
  // Frames already read (and released) by the prefetch of the user's skips: replayed as placeholders.
  let refSkipped = userSkipRef;
  const disSkipped = [...userSkipDist];

  if (auto.length > 0) {
    const range = wholeNumber('searchRange', options.searchRange, DEFAULT_SEARCH_RANGE);
    const formats = await Promise.allSettled([ref.format(), ...auto.map((k) => dis[k]!.format())]);
    for (const f of formats) if (f.status === 'rejected') throw f.reason;
    const [rf, ...dfs] = formats.map((f) => (f as PromiseFulfilledResult<FrameFormat>).value);
    auto.forEach((k, j) => checkFormats(ref, rf!, dis[k]!, dfs[j]!, options.minDimension ?? DEFAULT_MIN_DIMENSION));
    const k = searchFramesFor(rf!, range, options.searchFrames, options.maxBufferBytes ?? DEFAULT_MAX_BUFFER_BYTES);

    const iterators = [ref, ...auto.map((i) => dis[i]!)].map((source) => source[Symbol.asyncIterator]());
    const stopAll = () => {
      for (const it of iterators) it.return?.()?.catch(() => {});
    };
    const fetched = await Promise.allSettled(iterators.map((it, j) => prefetch(it, j === 0 ? userSkipRef : userSkipDist[auto[j - 1]!]!, k)));
    const failed = fetched.find((f): f is PromiseRejectedResult => f.status === 'rejected');
    if (failed) {
      stopAll();
      throw failed.reason;
    }
    const [refBuf, ...disBufs] = fetched.map((f) => (f as PromiseFulfilledResult<Prefetched>).value);
    try {
      auto.forEach((i, j) => {
        const disBuf = disBufs[j]!;
        if (refBuf!.frames.length === 0 || disBuf.frames.length === 0) return;
        const search = searchOffset(refBuf!.frames.map((f) => f.luma), disBuf.frames.map((f) => f.luma), rf!, { ...options.search, range });
        offsets[i] = search.offset;
        searched[i] = {
          psnr: search.psnr, confidence: search.confidence, confident: search.confident, static: search.static,
          runnerUp: search.runnerUp, search, framesSearched: { ref: refBuf!.frames.length, dis: disBuf.frames.length },
        };
      });
    } catch (error) {
      stopAll();
      throw error;
    }
    refSource = new ReplaySource(ref, iterators[0]!, refBuf!);
    refSkipped = refBuf!.skipped;
    auto.forEach((i, j) => {
      disSources[i] = new ReplaySource(dis[i]!, iterators[j + 1]!, disBufs[j]!);
      disSkipped[i] = disBufs[j]!.skipped;
    });
  }

  const lead = Math.max(0, ...offsets);
  const reports = modes.map((mode, i): AlignmentReport | undefined => {
    if (mode === undefined) return undefined;
    const skips = { frameSkipRef: userSkipRef + lead, frameSkipDist: userSkipDist[i]! + lead - offsets[i]! };
    if (mode !== 'auto') {
      return { offset: mode, mode: 'fixed', psnr: undefined, confidence: 1, confident: true, static: false, runnerUp: undefined, ...skips, search: undefined, framesSearched: undefined };
    }
    const found = searched[i];
    return found ? { offset: offsets[i]!, mode: 'auto', ...found, ...skips } : undefined;
  });
  return {
    ref: refSource,
    dis: disSources,
    frameSkipRef: refSkipped + lead,
    frameSkipDist: disSkipped.map((skipped, i) => skipped + lead - offsets[i]!),
    reports,
  };
}
