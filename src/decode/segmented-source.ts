/**
 * A compressed local file decoded by several ffmpeg processes at once: the file is cut at
 * keyframes into segments (from its InputIndex: ffmpeg's own packet list), and up to K
 * decoders run over consecutive segments, each started at its keyframe (keyframeAt, as the
 * queue's workers start) and stopped after its segment's frames (`-frames:v`). The first
 * decoder starts at frame 0 before the packet list is read (the list reads the whole file),
 * and is stopped at the first segment's end once it is known. Frames are yielded strictly in
 * order; a decoder ahead of the one being read fills its own frame pool and then waits (the
 * pool is the backpressure: ffmpeg blocks on its output), so memory is K pools of a bounded
 * number of frames however long the file.
 *
 * The frames are those of one decoder, byte for byte: a decoder keeps the frames timed from
 * its keyframe to the next segment's (ffmpeg's select: open GOPs' leading pictures are the
 * previous segment's, whose decoder reads on past its last frame's packet), starts one
 * keyframe earlier where GOPs are open, and ffmpeg's constant-rate y4m output repeats or drops
 * nothing when the time stamps are those of a constant rate. Where that cannot be shown
 * (variable frame rate, a frame rate ffmpeg writes that is not the packets', fewer keyframes
 * than two segments, an index that fails) the first decoder runs to the end, as one decoder.
 * Segments whose frame counts or formats disagree with the index end the run with an error
 * naming the input and frame, never with other frames.
 */

import { InputError } from '../errors.js';
import type { Frame, FrameFormat, FrameSource } from '../types.js';
import { FfmpegSource, protocolWhitelist, type FfmpegSourceOptions } from './ffmpeg-source.js';
import { choosePixelFormat, lumaPlaneOf, probeInput, type FfmpegInputInfo } from './ffmpeg-probe.js';
import { resolveFfmpegPath } from './ffmpeg-path.js';
import { indexWithFfmpeg, keyframeAt, keyframeTimeAfterSeek, type InputIndex } from './input-index.js';
import { DEFAULT_POOL_SLOTS } from './stream-frame-source.js';
import { autoDecoders } from './decoder-options.js';
import { sameFormat } from './frame-layout.js';

// Its home moved so that openFrameSource resolves decoders: 'auto' without loading this module.
export { autoDecoders };

/** Bytes of frames each decoder may hold ahead of the reader (its pool beyond the reader's own). */
const AHEAD_BYTES = 48 << 20;
const MIN_AHEAD = 4;
const MAX_AHEAD = 64;

export interface SegmentedSourceOptions extends FfmpegSourceOptions {
  /** Decoders at once (2 or more; 1 is one FfmpegSource). */
  decoders: number;
  /**
   * Frames a decoder may decode ahead of the reader (default: what 48 MiB holds, 4 to 64).
   * Segments are cut at the first keyframe at least this many frames on.
   */
  aheadFrames?: number;
}

interface Segment {
  /** Its place in the file's segments. */
  k: number;
  first: number;
  count: number;
  last: boolean;
}

interface Runner {
  segment: Segment;
  source: FfmpegSource;
  frames: Frame[];
  yielded: number;
  /** Frames taken from its decoder (past its segment's end: released, the decoder stopped). */
  pushed: number;
  done: boolean;
  error: unknown;
  wake: (() => void) | undefined;
}

type Plan = { info: FfmpegInputInfo; format: FrameFormat };

export class SegmentedFfmpegSource implements FrameSource {
  readonly label: string;
  /** Decoders the run uses, once open (1: one decoder, see fallbackReason). */
  decodersUsed: number | undefined;
  /** Why one decoder runs, when it does. */
  fallbackReason: string | undefined;
  /** The segments' first frames, once open (one decoder: [0]). */
  segmentStarts: number[] | undefined;
  /** Each segment's ffmpeg decoder once it has started, by segment (for tests that check none is left running). */
  readonly decoderPids: number[] = [];

  private readonly input: string;
  private readonly options: SegmentedSourceOptions;
  private opening: Promise<Plan | undefined> | undefined;
  private readonly runners: Runner[] = [];
  /** Segments started so far (runners[0] reads segment `started - runners.length`). */
  private started = 0;
  private nextIndex = 0;
  private iterated = false;
  private closed = false;

  constructor(input: string, options: SegmentedSourceOptions) {
    this.input = input;
    this.options = options;
    this.label = options.label ?? input;
  }

  format(): Promise<FrameFormat> {
    return this.open().then((plan) => {
      if (!plan) throw new InputError('E_INPUT_EMPTY', this.label, 'was closed before ffmpeg started: no frames');
      return plan.format;
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<Frame> {
    if (this.iterated) throw new Error(`${this.label}: a FrameSource can be iterated only once`);
    this.iterated = true;
    return {
      next: async (): Promise<IteratorResult<Frame>> => {
        const plan = await this.open();
        if (!plan || this.closed) return { done: true, value: undefined };
        return this.within(this.nextFrame(plan));
      },
      return: async () => {
        await this.close();
        return { done: true, value: undefined };
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listing.abort();
    const closing: Array<Promise<void>> = [];
    for (const runner of this.runners.splice(0)) closing.push(this.retire(runner));
    await Promise.all(closing);
  }

  private open(): Promise<Plan | undefined> {
    if (!this.opening) {
      this.opening = this.closed ? Promise.resolve(undefined) : this.plan();
      this.opening.catch(() => {}); // reported by format() / next()
    }
    return this.opening;
  }

  /**
   * Starts the first segment's decoder at frame 0 at once: the first frame waits for the
   * probe only, not for the packet list (which reads the whole file). Once the list is read
   * (segmentation), that decoder either runs to the end (one decoder) or is stopped at the
   * first segment's end, the others started.
   */
  private async plan(): Promise<Plan | undefined> {
    const ffmpegPath = await resolveFfmpegPath(this.options.ffmpegPath ? { ffmpegPath: this.options.ffmpegPath } : {});
    const probeOptions = [...(this.options.inputOptions ?? [])];
    if (this.options.protocols) probeOptions.unshift('-protocol_whitelist', protocolWhitelist(this.options.protocols));
    const indexing = indexWithFfmpeg(this.input, this.label, ffmpegPath, this.listing.signal);
    indexing.catch(() => {});
    // The probe's error is the one decoder's error: raised as it would be.
    const { info } = await probeInput(ffmpegPath, this.input, this.label, probeOptions);
    if (this.closed) return undefined;
    // Its end is unknown until the packet list is read: open-ended (`last`) until then.
    const whole: Segment = { k: 0, first: 0, count: Infinity, last: true };
    const first = this.launch(whole, undefined, info, this.aheadFor(info.video?.width, info.video?.height, info));
    this.runners.push(first);
    this.started = 1;
    const format = await first.source.format();
    if (this.closed) return undefined;
    this.segmenting = this.segment(indexing, first, info, format);
    this.segmenting.catch(() => {});
    return { info, format };
  }

  /** Cuts the file once its packet list is read and starts the decoders past the first. */
  private async segment(indexing: Promise<InputIndex>, first: Runner, info: FfmpegInputInfo, format: FrameFormat): Promise<void> {
    let index: InputIndex | undefined;
    try {
      index = await indexing;
    } catch {
      index = undefined;
    }
    const single = (why: string): void => {
      this.fallbackReason = why;
      this.decodersUsed = 1;
      this.segmentStarts = [0];
    };
    if (this.closed) return;
    // The first decoder already gave every frame (a short file): nothing left to share.
    if (first.done || this.runners[0] !== first) return single('the first decoder ended before the packet list was read');
    if (!index || index.kind !== 'ffmpeg') return single('ffmpeg cannot list its packets');
    if (!index.cfr) return single('its frame rate is variable');
    const segments = this.cut(index, info);
    if (segments.length < 2) return single('too few keyframes for two segments');
    // The rate ffmpeg writes must be the packets' rate, or its constant-rate output would
    // repeat or drop frames at places that depend on where a decoder started.
    const drift = format.fps && index.fps ? Math.abs(format.fps / index.fps - 1) * index.frames : Infinity;
    if (!(drift < 0.25)) return single(`ffmpeg writes it at ${format.fps ?? 'an unknown'} fps, not its packets' ${index.fps?.toFixed(3) ?? 'unknown'} fps`);
    // The first decoder now ends where the first segment does (pump stops it there). It may
    // have passed that end already (a slow packet list): its segment then takes in the next ones.
    while (segments.length > 1 && segments[0]!.count < first.pushed) {
      const [a, b] = segments.splice(0, 2) as [Segment, Segment];
      segments.unshift({ k: 0, first: 0, count: a.count + b.count, last: b.last });
    }
    if (segments.length < 2) return single('the first decoder read past the other segments before the packet list was read');
    segments.forEach((segment, k) => (segment.k = k));
    first.segment = segments[0]!;
    this.context = { segments, index, info };
    this.decodersUsed = Math.min(this.options.decoders, segments.length);
    this.segmentStarts = segments.map((s) => s.first);
    this.fill();
    // A reader waiting on the first decoder at its (new) end moves on to the next segment.
    const w = first.wake;
    first.wake = undefined;
    w?.();
  }

  /** Settles once the file is cut (or one decoder is chosen); for tests and reports. */
  async segmented(): Promise<void> {
    await this.open();
    await this.segmenting;
  }

  private segmenting: Promise<void> | undefined;
  /** Stops the packet list's ffmpeg when the run ends before it has read the file. */
  private readonly listing = new AbortController();

  /** Frames a decoder holds ahead of the reader. */
  private ahead(index: Extract<InputIndex, { kind: 'ffmpeg' }>, info: FfmpegInputInfo): number {
    return this.aheadFor(index.width, index.height, info);
  }

  private aheadFor(width: number | undefined, height: number | undefined, info: FfmpegInputInfo): number {
    if (this.options.aheadFrames !== undefined) return Math.max(1, Math.floor(this.options.aheadFrames));
    if (!width || !height) return MIN_AHEAD;
    const pixFmt = choosePixelFormat(info.video?.pixFmt);
    const depth = lumaPlaneOf(pixFmt)?.bitDepth ?? 8;
    const size = this.options.scaleTo ?? { width, height };
    const bytes = size.width * size.height * (depth > 8 ? 2 : 1) * (this.options.planes === 'all' ? 3 : 1);
    return Math.max(MIN_AHEAD, Math.min(MAX_AHEAD, Math.floor(AHEAD_BYTES / Math.max(1, bytes))));
  }

  /** Segments of at least `ahead` frames, each starting at a keyframe. */
  private cut(index: Extract<InputIndex, { kind: 'ffmpeg' }>, info: FfmpegInputInfo): Segment[] {
    const length = this.ahead(index, info);
    const starts = [0];
    for (const keyframe of index.keyframes) if (keyframe - starts[starts.length - 1]! >= length) starts.push(keyframe);
    return starts.map((first, k) => {
      const end = k + 1 < starts.length ? starts[k + 1]! : index.frames;
      return { k, first, count: end - first, last: k + 1 === starts.length };
    });
  }

  private context: { segments: Segment[]; index: Extract<InputIndex, { kind: 'ffmpeg' }>; info: FfmpegInputInfo } | undefined;

  /** Keeps K decoders running: the segment being read and the next K - 1. */
  private fill(): void {
    const context = this.context;
    if (!context) return;
    while (!this.closed && this.runners.length < this.options.decoders && this.started < context.segments.length) {
      const segment = context.segments[this.started++]!;
      this.runners.push(this.launch(segment, context.index, context.info, this.ahead(context.index, context.info)));
    }
  }

  /**
   * A decoder for a segment: from its keyframe (keyframeAt: a seek at or before it, one
   * keyframe earlier with open GOPs, ffmpeg dropping the frames timed before it and from the
   * next segment's keyframe on) and stopped after its frames. No index: from the start.
   */
  private launch(segment: Segment, index: Extract<InputIndex, { kind: 'ffmpeg' }> | undefined, info: FfmpegInputInfo, ahead: number): Runner {
    const start = index && segment.first > 0 ? keyframeAt(index, segment.first) : undefined;
    if (start && start.keyframe !== segment.first) throw new Error(`segment at ${segment.first} does not start at a keyframe`);
    const { decoders: _decoders, aheadFrames: _ahead, stallTimeoutMs: _stall, ...own } = this.options;
    const slots = (this.options.poolSlots ?? DEFAULT_POOL_SLOTS) + ahead;
    const to = start && index && !segment.last ? keyframeTimeAfterSeek(index, start, segment.first + segment.count) : undefined;
    const source = new FfmpegSource(this.input, {
      ...own,
      // The stall timeout is this source's: a decoder ahead waits for its pool, not stalled.
      inputInfo: info,
      inputOptions: [...(this.options.inputOptions ?? []), ...(start?.seek ?? [])],
      ...(start?.from !== undefined ? { selectSeconds: { from: start.from, ...(to !== undefined ? { to } : {}) } } : {}),
      firstIndex: segment.first,
      poolSlots: slots,
      ...(segment.last ? {} : { frameLimit: segment.count }),
    });
    const runner: Runner = { segment, source, frames: [], yielded: 0, pushed: 0, done: false, error: undefined, wake: undefined };
    void this.pump(runner);
    return runner;
  }

  /** Reads a decoder's frames into its runner as fast as its pool allows. */
  private async pump(runner: Runner): Promise<void> {
    const wake = () => {
      const w = runner.wake;
      runner.wake = undefined;
      w?.();
    };
    let watched = false;
    const record = () => {
      if (watched || runner.source.pid === undefined) return;
      watched = true;
      this.decoderPids[runner.segment.k] = runner.source.pid;
    };
    try {
      const iterator = runner.source[Symbol.asyncIterator]();
      for (;;) {
        const step = await iterator.next();
        record();
        if (step.done) break;
        if (this.closed || runner.pushed >= runner.segment.count) {
          // The first decoder, started before its segment's end was known, is stopped there.
          step.value.release();
          break;
        }
        runner.frames.push(step.value);
        runner.pushed++;
        wake();
      }
      if (!this.closed && runner.pushed >= runner.segment.count) await runner.source.close();
    } catch (err) {
      record();
      runner.error = err;
    }
    runner.done = true;
    wake();
  }

  private async nextFrame(plan: Plan): Promise<IteratorResult<Frame>> {
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      const runner = this.runners[0];
      if (!runner) return { done: true, value: undefined };
      const frame = runner.frames.shift();
      if (frame) {
        runner.yielded++;
        this.nextIndex = frame.index + 1;
        if (!sameFormat(frame.format, plan.format)) {
          frame.release();
          throw new InputError(
            'E_INPUT_FORMAT',
            this.label,
            `decoded from the keyframe at frame ${runner.segment.first}, its frames are ${describe(frame.format)}, not ${describe(plan.format)} as from its start: decode it with one decoder (--decoders 1)`,
            frame.index,
          );
        }
        return { done: false, value: frame };
      }
      if (runner.error !== undefined) throw runner.error;
      // Its segment read (the first decoder may still be running past it: retire stops it).
      if (runner.done || (!runner.segment.last && runner.yielded >= runner.segment.count)) {
        if (!runner.segment.last && runner.yielded !== runner.segment.count) {
          throw new InputError(
            'E_FFMPEG',
            this.label,
            `the decoder started at its keyframe at frame ${runner.segment.first} gave ${runner.yielded} frames where ffmpeg's packet list has ${runner.segment.count}: decode it with one decoder (--decoders 1)`,
            runner.segment.first + runner.yielded,
          );
        }
        this.runners.shift();
        await this.retire(runner);
        this.fill();
        continue;
      }
      await new Promise<void>((resolve) => (runner.wake = resolve));
    }
  }

  /** Stops a decoder and gives back the frames it decoded that nobody will read. */
  private async retire(runner: Runner): Promise<void> {
    for (const frame of runner.frames.splice(0)) frame.release();
    await runner.source.close();
  }

  /** `step`, or E_INPUT_STALLED (every decoder stopped) when no frame comes within the stall timeout. */
  private async within<T>(step: Promise<T>): Promise<T> {
    const limit = this.options.stallTimeoutMs;
    if (limit === undefined || !(limit > 0) || !Number.isFinite(limit)) return step;
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        step.catch(() => {});
        const frame = this.nextIndex;
        void this.close();
        reject(new InputError('E_INPUT_STALLED', this.label, `no frame for ${limit / 1000} s (the stall timeout): the input or ffmpeg stalled; ffmpeg was stopped`, frame));
      }, limit);
    });
    try {
      return await Promise.race([step, stalled]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function describe(f: FrameFormat): string {
  return `${f.width}x${f.height} ${f.bitDepth}-bit ${f.chroma}`;
}
