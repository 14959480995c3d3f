/**
 * Live QC of a queued title (--window, --alert, --align, the drift monitor): the same
 * notices, in the same places of the stream, as the single run of the same command.
 *
 * - Windows and alerts read only the per-frame results: RunQc.attach runs on the merged
 *   stream, which is the single run's sequence of results, so their lines are the same.
 * - Alignment needs the first frames of every input: the offset search runs once, here, in
 *   the coordinator, before the title is planned (alignTitle); the offsets become the
 *   skips of the planned title, so every segment is cut from aligned inputs. The alignment
 *   notices come first, as in the single run.
 * - The drift monitor compares thumbnails of the frames around a sudden fall (or rise) of
 *   the scores. The coordinator never decodes the title; instead a shadow monitor per
 *   rendition (the same score logic, no pairs) sees each score just before it is handed on,
 *   and when it queues a search, the coordinator decodes the few pairs that search reads
 *   (openInputAt, a keyframe away at most) and shows them to the run's monitors before the
 *   frames they belong to go on. The search then runs where the single run's does, in frame
 *   terms (DriftMonitor): right after the frame whose score lets it run. A run with no model (the
 *   monitor scores luma PSNR of every pair) has no drift monitor on a queue: that would
 *   decode the whole title here.
 */
import { Observable, concatMap, from } from '../rx.js';
import { alignSources, skipsForOffset, type AlignmentReport } from '../align/align-pairs.js';
import { DriftMonitor } from '../align/drift-monitor.js';
import { matchReferenceDepth } from '../decode/bit-depth.js';
import { openFrameSource } from '../decode/open-source.js';
import { groupFrames } from '../decode/pair-frames.js';
import { MIN_FRAME_DIMENSION } from '../kernels/limits.js';
import type { Delivery, LadderOptions, LadderResult, ResolvedRendition } from '../pipeline/ladder-types.js';
import type { RunQc } from '../pipeline/qc.js';
import type { FrameFormat, FrameGroup, FrameSource } from '../types.js';
import { openInputAt } from './open-at.js';
import type { TitleSpec } from './jobs.js';

/** The offsets found (or given), as the skips a planned title takes. */
export interface AlignedTitle {
  frameSkipRef: number;
  renditions: ResolvedRendition[];
  /** Per rendition: its notice, or undefined where it is not aligned. */
  reports: Array<AlignmentReport | undefined>;
}

/**
 * Runs the single run's offset search (alignSources) on the inputs' first frames, and
 * turns each offset into skips: the reference skips the largest positive offset, each
 * rendition the rest, exactly as the single run pairs them.
 */
export async function alignTitle(reference: string, renditions: readonly ResolvedRendition[], options: LadderOptions): Promise<AlignedTitle> {
  const modes = renditions.map((r) => r.align ?? options.align);
  const common = {
    ...(options.width !== undefined ? { width: options.width } : {}),
    ...(options.height !== undefined ? { height: options.height } : {}),
    ...(options.pixelFormat !== undefined ? { pixelFormat: options.pixelFormat } : {}),
    ...(options.bitDepth !== undefined ? { bitDepth: options.bitDepth } : {}),
    ...(options.ffmpegPath !== undefined ? { ffmpegPath: options.ffmpegPath } : {}),
    planes: 'luma' as const,
  };
  const ref = openFrameSource(reference, { ...common, label: reference });
  const opened: FrameSource[] = [ref];
  try {
    const refFormat = await ref.format();
    const dis: FrameSource[] = [];
    for (const r of renditions) {
      let source = openFrameSource(r.input, { ...common, label: r.label });
      opened.push(source);
      if (options.scale === true) {
        const format = await source.format();
        if (format.width !== refFormat.width || format.height !== refFormat.height) {
          source = openFrameSource(r.input, { ...common, label: r.label, scaleTo: { width: refFormat.width, height: refFormat.height } });
          opened.push(source);
        }
      }
      dis.push(source);
    }
    const widened = await widen(ref, refFormat, dis, options.onWarning);
    const userSkipDist = renditions.map((r) => r.frameSkip ?? options.frameSkipDist ?? 0);
    const aligned = await alignSources(ref, widened, {
      modes,
      frameSkipRef: options.frameSkipRef,
      frameSkipDist: userSkipDist,
      searchRange: options.alignRange,
      minDimension: MIN_FRAME_DIMENSION,
    });
    // The skips on the inputs as files (alignSources' own count replayed frames of its sources).
    const offsets = modes.map((mode, k) => (mode === undefined ? 0 : (aligned.reports[k]?.offset ?? 0)));
    const lead = Math.max(0, ...offsets);
    const userSkipRef = options.frameSkipRef ?? 0;
    return {
      frameSkipRef: skipsForOffset(lead, userSkipRef).frameSkipRef,
      renditions: renditions.map((r, k) => {
        const { align: _align, ...rest } = r;
        return { ...rest, frameSkip: userSkipDist[k]! + lead - offsets[k]! };
      }),
      reports: aligned.reports,
    };
  } finally {
    await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  }
}

async function widen(ref: FrameSource, rf: FrameFormat, dis: FrameSource[], onWarning: ((message: string) => void) | undefined): Promise<FrameSource[]> {
  const formats = await Promise.allSettled(dis.map((d) => d.format()));
  if (formats.some((f) => f.status === 'rejected')) return dis;
  return dis.map((d, k) => {
    const df = (formats[k] as PromiseFulfilledResult<FrameFormat>).value;
    return df.width === rf.width && df.height === rf.height ? matchReferenceDepth(ref, rf, d, df, onWarning) : d;
  });
}

/** What the drift feed needs of the run. */
export interface DriftFeedSetup {
  spec: TitleSpec;
  names: readonly string[];
  /** The score the run's monitors watch (the first model's), or undefined: no monitor fed. */
  metric: string | undefined;
  options: LadderOptions;
  qc: RunQc;
  ffmpegPath?: string | undefined;
}

/** Pairs decoded beyond a search's own reach on each side: a margin for a ladder's searches that start a few frames apart. */
const MARGIN = 8;

/** Pairs being decoded for the monitors: output frames next..hi, from one opening of the inputs. */
interface Feeding {
  groups: AsyncIterator<FrameGroup>;
  next: number;
  hi: number;
  close(): Promise<void>;
}

/**
 * Feeds the run's drift monitors the pairs their searches read: before frame g is handed on,
 * every wanted pair up to g (the single run has decoded at least those by then). A search
 * runs at the score of a frame past the pairs it reads (DriftMonitor), so each drift notice
 * lands after the same frame as in the single run, whatever its --threads. `offsets`
 * follows the monitors' offsets through their notices (noticeDrift), which widen the pairs
 * a search reads.
 */
export class DriftFeed {
  private readonly shadows: DriftMonitor[];
  private readonly handled: number[];
  private readonly offsets: number[];
  private readonly index: Map<string, number>;
  private readonly reach: { before: number; after: number; range: number };
  /** Pairs shown to the monitors so far: 0..fedUpTo, where wanted. */
  private fedUpTo = -1;
  private feeding: Feeding | undefined;

  constructor(private readonly setup: DriftFeedSetup) {
    const drift = setup.options.drift ?? true;
    const settings = typeof drift === 'object' ? drift : {};
    this.shadows = setup.names.map(() => new DriftMonitor({ ...settings, metric: 'score', onEvent: undefined }));
    this.handled = setup.names.map(() => 0);
    this.offsets = setup.names.map(() => 0);
    this.index = new Map(setup.names.map((name, k) => [name, k]));
    this.reach = { before: settings.before ?? 8, after: settings.after ?? 8, range: settings.localRange ?? 2 };
  }

  /** A drift notice of the run: the offset the next searches of its rendition start from. */
  noticeDrift(rendition: string | undefined, kind: string, offset: number): void {
    if (kind === 'collapse') return;
    const k = rendition === undefined ? 0 : this.index.get(rendition);
    if (k !== undefined) this.offsets[k] = offset;
  }

  /** Passes the deliveries on, each once the pairs the single run has seen by then have been shown to the monitors. */
  operator(): (source: Observable<Delivery<LadderResult>>) => Observable<Delivery<LadderResult>> {
    return (source) =>
      new Observable<Delivery<LadderResult>>((subscriber) => {
        const subscription = source.pipe(concatMap((delivery) => from(this.before(delivery).then(() => delivery)))).subscribe({
          next: (delivery) => subscriber.next(delivery),
          error: (error: unknown) => subscriber.error(error),
          // The rest of the wanted pairs (past the last frame scored, with --subsample), as the
          // single run's rings hold them when its last searches run at the end.
          complete: () => {
            this.feedUpTo(Infinity).then(
              () => subscriber.complete(),
              (error: unknown) => subscriber.error(error),
            );
          },
        });
        return () => {
          subscription.unsubscribe();
          void this.feeding?.close();
        };
      });
  }

  private async before(delivery: Delivery<LadderResult>): Promise<void> {
    if (this.setup.metric === undefined) return;
    const { result } = delivery.result;
    const last = this.setup.spec.frames - 1;
    // The pairs up to this frame, before its score reaches the monitors.
    const horizon = result.index;
    await this.feedUpTo(horizon);
    const value = result.scores[this.setup.metric];
    if (value === undefined || !Number.isFinite(value)) return;
    const k = this.index.get(delivery.result.rendition)!;
    const shadow = this.shadows[k]!;
    shadow.observeScore(result.index, value);
    const searches = shadow.queuedSearches;
    while (this.handled[k]! < searches.length) {
      const start = searches[this.handled[k]!]!;
      this.handled[k]!++;
      const reach = this.reach.range + Math.abs(this.offsets[k]!);
      await this.want(Math.max(0, start - this.reach.before - reach - MARGIN), Math.min(last, start + this.reach.after + reach));
    }
    await this.feedUpTo(horizon);
  }

  /** Pairs lo..hi are wanted: extends the feeding under way, or starts one. */
  private async want(lo: number, hi: number): Promise<void> {
    const from = Math.max(lo, this.fedUpTo + 1);
    if (hi < from) return;
    if (this.feeding && from <= this.feeding.hi + 1) {
      this.feeding.hi = Math.max(this.feeding.hi, hi);
      return;
    }
    await this.feeding?.close();
    this.feeding = this.open(from, hi);
  }

  /** Shows the wanted pairs up to `limit` to the monitors. */
  private async feedUpTo(limit: number): Promise<void> {
    const feeding = this.feeding;
    if (!feeding) return;
    while (feeding.next <= Math.min(limit, feeding.hi)) {
      const step = await feeding.groups.next();
      if (step.done) {
        feeding.hi = feeding.next - 1;
        break;
      }
      const group = step.value;
      try {
        this.setup.qc.observeGroup(group);
      } finally {
        group.ref.release();
        for (const frame of group.dis) frame?.release();
      }
      this.fedUpTo = group.index;
      feeding.next = group.index + 1;
    }
    if (feeding.next > feeding.hi) {
      await feeding.close();
      if (this.feeding === feeding) this.feeding = undefined;
    }
  }

  /** Opens every input at output frame lo: its groups, indexed as in the title, up to the title's end. */
  private open(lo: number, hi: number): Feeding {
    const { spec } = this.setup;
    const open = (input: TitleSpec['reference'], scaleTo?: { width: number; height: number }) =>
      openInputAt(input.input, input.index, lo + input.skip, {
        label: input.label,
        planes: 'luma',
        poolSlots: 4,
        ...(spec.raw ? { raw: spec.raw } : {}),
        ...(this.setup.ffmpegPath !== undefined ? { ffmpegPath: this.setup.ffmpegPath } : {}),
        ...(scaleTo ? { scaleTo } : {}),
      });
    const ref = open(spec.reference);
    const dis = spec.renditions.map((r) => open(r, r.scaleTo));
    const sources = [ref.source, ...dis.map((d) => d.source)];
    async function* groups(): AsyncGenerator<FrameGroup> {
      const refFormat = await ref.source.format();
      const widened = await widen(ref.source, refFormat, dis.map((d) => d.source), undefined);
      for await (const group of groupFrames(ref.source, widened, {
        frameSkipRef: ref.skip,
        frameSkipDist: dis.map((d) => d.skip),
        frameCnt: spec.frames - lo,
        minDimension: MIN_FRAME_DIMENSION,
        countRemaining: false,
      })) {
        yield { ...group, index: lo + group.index };
      }
    }
    const iterator = groups();
    let closed: Promise<void> | undefined;
    return {
      groups: iterator,
      next: lo,
      hi,
      close: () =>
        (closed ??= (async () => {
          await iterator.return(undefined).catch(() => undefined);
          await Promise.all(sources.map((s) => s.close().catch(() => undefined)));
        })()),
    };
  }
}
