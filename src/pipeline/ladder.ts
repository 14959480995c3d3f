/**
 * The scoring engine: one reference against one or more distorted inputs (a transcoder's
 * ladder of renditions), as a stream. score() is this engine with one rendition; there is
 * no other pipeline.
 *
 *   reference ─┐                       ┌─ rendition 0's results
 *   dis 0 ─────┼─ groupFrames ─ credits ─ backend.extractMany ─┼─ rendition 1's results
 *   dis 1 ─────┘   (one reference frame,      (reference uploaded   └─ ...
 *                   every rendition's frame)    once, motion once)
 *
 * The reference is decoded once; each of its frames goes, in one FrameGroup, with the frame
 * of every rendition at the same position, and the backend releases it once every
 * rendition's computation has read it (reference counting in the cpu backend, one staging
 * copy in the gpu backend), back into the reference's frame pool.
 *
 * Memory: a group is pulled only with a credit, and the credit comes back once every
 * rendition's result of that group has been delivered (at once for a group with none, a
 * frame --subsample leaves out), so at most `maxFramesInFlight` groups exist at once, and
 * each source's frame pool holds that many frames plus two.
 *
 * Renditions of another size than the reference are scaled to its size (bicubic, through
 * ffmpeg) when `scale` is on: a regular file is reopened scaled once its size is known;
 * anything that cannot be read twice (standard input, a named pipe, a URL, a Readable) is
 * opened through ffmpeg's scaler from the start (a no-op at the same size).
 */
import { availableParallelism } from 'node:os';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { Observable, catchError, defer, finalize, map, mergeMap, tap, throwError } from '../rx.js';
import { flatMapSync } from './flat-map-sync.js';
import { locatedFramesAllowed, locateFrames } from '../decode/located-frames.js';
import { backendErrorAt, hangDevice, loseDevice, testDeviceHangAt, testDeviceLossAt } from './backend-fault.js';
import type { FeatureBackend } from '../kernels/backend.js';
import { createPlanBackend } from '../kernels/create-backend.js';
import { resolveRun } from './run-plan.js';
import { autoRunsOnCpu, gpuThreadPays } from './short-run.js';
import { loadNative } from '../kernels/native.js';
import { checkFrameMemory, slotBytes } from '../pool/memory-budget.js';
import { asTranscodeInput, isFluentCommand, isTranscodeInput, type FluentCommand, type TranscodeInput } from '../decode/fluent-command.js';
import { isFrameSource, openFrameSource, type FrameInput, type SourceOptions } from '../decode/open-source.js';
import { groupFrames } from '../decode/pair-frames.js';
import type { Model } from './model/index.js';
import type { FrameResult } from './writers/types.js';
import type { FrameFeatures, FrameFormat, FrameGroup, FrameSource } from '../types.js';
import { matchReferenceDepth } from '../decode/bit-depth.js';
import { Credits } from './credits.js';
import { pullWithCredits } from './pull-observable.js';
import { MIN_FRAME_DIMENSION } from '../kernels/limits.js';
import { UsageError } from '../errors.js';
import type { Delivery, LadderOptions, LadderResult, Rendition, RenditionInput, ResolvedRendition } from './ladder-types.js';
import type { RunQc } from './qc.js';
import type { AlignMode } from '../align/align-pairs.js';
import { mark } from '../trace.js';

export type { Delivery, LadderOptions, LadderResult, Rendition, RenditionInput, ResolvedRendition } from './ladder-types.js';
export { DEFAULT_MODEL, resolveModelSpecs } from './model-specs.js';

/** Whether `x` is a Rendition rather than an input. */
export function isRendition(x: unknown): x is Rendition {
  // A fluent-ffmpeg command has an input() method: it is an input, not a Rendition.
  return typeof x === 'object' && x !== null && !(x instanceof Readable) && !isFrameSource(x) && !isFluentCommand(x) && 'input' in x;
}

/** A rendition's default name: its base name without the extension. */
export function defaultRenditionName(input: FrameInput, position: number): string {
  const fallback = `rendition${position + 1}`;
  let label: string | undefined;
  if (typeof input === 'string') label = input;
  else if (isFrameSource(input)) label = input.label;
  else if (isFluentCommand(input) || isTranscodeInput(input)) label = transcodeLabel(input);
  if (label === undefined) return fallback;
  if (label === '-') return 'stdin';
  let file = label;
  if (/^[a-z][a-z0-9+.-]+:\/\//i.test(label)) {
    try {
      const url = new URL(label);
      file = decodeURIComponent(url.pathname) || url.hostname;
    } catch {
      // not a URL after all: a path
    }
  }
  const base = path.basename(file.replace(/[/\\]+$/, ''));
  const name = base.includes('.') && !base.startsWith('.') ? base.slice(0, base.lastIndexOf('.')) : base;
  return name || fallback;
}

/** Names and labels for each rendition; UsageError for duplicate or empty names. */
export function resolveRenditions(renditions: readonly RenditionInput[]): ResolvedRendition[] {
  if (renditions.length === 0) throw new UsageError('a ladder needs at least one rendition');
  const seen = new Map<string, number>();
  return renditions.map((r, k) => {
    const spec: Rendition = isRendition(r) ? r : { input: r };
    const name = spec.name ?? defaultRenditionName(spec.input, k);
    if (typeof name !== 'string' || name === '') throw new UsageError(`rendition ${k + 1} has an empty name: give it one (name=...)`);
    const other = seen.get(name);
    if (other !== undefined) {
      throw new UsageError(
        `renditions ${other + 1} and ${k + 1} are both named "${name}": names must be unique; give each its own name ` +
          `(-d name=${name}-2:path=... on the command line, { input, name } in the API)`,
      );
    }
    seen.set(name, k);
    const resolved: ResolvedRendition = { input: spec.input, name, label: labelOf(spec.input, name) };
    if (spec.frameSkip !== undefined) resolved.frameSkip = spec.frameSkip;
    if (spec.align !== undefined) resolved.align = spec.align;
    return resolved;
  });
}

/** What a run needs once the models are loaded, the inputs open and the backend ready. */
interface Opened {
  backend: FeatureBackend;
  models: Model[];
  countRemaining: boolean;
  /** The live QC module, for runs that ask for QC (usesQc). */
  qc: typeof import('./qc.js') | undefined;
}

/**
 * Whether a run has live QC (windows, alerts, alignment, drift monitors: RunQc has work, and
 * the QC callbacks may be called): only those load its modules (qc.ts, the windows, alerts
 * and align/ ones).
 */
export function usesQc(options: LadderOptions, renditions: ReadonlyArray<{ align?: AlignMode | undefined }>): boolean {
  const aligning = options.align !== undefined || renditions.some((r) => r.align !== undefined);
  return aligning || Boolean(options.windows) || Boolean(options.alerts?.length) || (options.drift !== undefined && options.drift !== false);
}

/**
 * Scores every rendition against `reference`, frame by frame: one Delivery per rendition
 * and frame, in frame order, each frame's renditions in the order given. Cold: each
 * subscription decodes and scores anew. `scale` is taken as given (false when absent).
 * `single`: a single pair (score()), whose QC notices carry no rendition.
 *
 * Live QC (see qc.ts): with `align`, the inputs are aligned (alignSources) before they are
 * grouped; each group is shown to the drift monitors before the backend reads it; each
 * result, once handed on, feeds the windows, alerts and monitors.
 */
export function runLadder(reference: FrameInput, renditions: readonly ResolvedRendition[], options: LadderOptions = {}, single = false): Observable<Delivery<LadderResult>> {
  const queue = options.queue;
  // Loaded only when used: the queue brings BullMQ and a Redis client.
  if (queue !== undefined) return defer(() => import('../queue/index.js')).pipe(mergeMap((q) => q.runLadderOnQueue(reference, renditions, options, queue, single)));
  return defer(() => {
    const threads = options.threads ?? defaultThreads();
    const inFlight = options.maxFramesInFlight ?? Math.max(4, threads * 2 + 2);
    const credits = new Credits(inFlight);
    const sourceOptions: SourceOptions = {
      width: options.width,
      height: options.height,
      pixelFormat: options.pixelFormat,
      bitDepth: options.bitDepth,
      ffmpegPath: options.ffmpegPath,
      poolSlots: inFlight + 2,
      ...(options.stallTimeoutMs !== undefined ? { stallTimeoutMs: options.stallTimeoutMs } : {}),
      ...(options.protocols !== undefined ? { protocols: options.protocols } : {}),
      ...(options.decoders !== undefined ? { decoders: options.decoders } : {}),
      ...(options.ffmpegInputOptions !== undefined ? { ffmpegInputOptions: options.ffmpegInputOptions } : {}),
    };
    const scale = options.scale === true;
    const names = renditions.map((r) => r.name);
    // Opened once the run plan says which planes the frames carry; closed at the end.
    let ref: FrameSource | undefined;
    const dis: Array<FrameSource | undefined> = [];
    const open = (k: number, scaleTo?: { width: number; height: number }): FrameSource => {
      const r = renditions[k]!;
      const source = openFrameSource(r.input, scaleTo ? { ...sourceOptions, label: r.label, scaleTo } : { ...sourceOptions, label: r.label });
      dis[k] = source;
      return source;
    };

    let countRemaining = true;
    const modes = renditions.map((r) => r.align ?? options.align);
    const aligning = modes.some((mode) => mode !== undefined);
    const run = (async (): Promise<Opened> => {
      const qcLoading = usesQc(options, renditions) ? import('./qc.js') : undefined;
      qcLoading?.catch(() => undefined); // awaited below, after the run's own errors
      const { plan, models } = await resolveRun(options);
      mark('models and plan');
      if (options.cpumask !== undefined) loadNative().setCpuMask(options.cpumask);
      const onAggregate = options.onAggregate;
      // The backend opens (on the gpu backend, Dawn's adapter and device: the longest step
      // before the first frame) while the inputs are opened and their headers read. Its
      // warnings wait for the inputs: a run whose input fails says only that, as before.
      const userWarning = options.onWarning;
      let held: string[] | undefined = [];
      const onWarning = userWarning && ((message: string) => (held ? held.push(message) : userWarning(message)));
      sourceOptions.planes = options.planes === 'all' ? 'all' : plan.planes;
      const reading = (ref = openFrameSource(reference, { ...sourceOptions, label: labelOf(reference, 'reference') }));
      if (!scale) renditions.forEach((_, k) => open(k));
      const opening = (async () => {
        let kind = options.backend ?? 'auto';
        // A run the cpu backend finishes before the GPU would be open never opens it (short-run.ts).
        const length = { frameCnt: options.frameCnt, frameSkipRef: options.frameSkipRef, renditions: renditions.length };
        if (kind === 'auto' && (await autoRunsOnCpu(plan, reference, () => reading.format(), { ...length, threads }))) kind = 'cpu';
        const gpuThread = kind !== 'cpu' && (await gpuThreadPays(plan, reference, () => reading.format(), length));
        // A thread the command line started early and this run does not take: ended now (prestart.ts).
        if (!gpuThread) (await import('../kernels/gpu-thread/prestart.js')).discardGpuThread();
        return createPlanBackend(plan, kind, {
          threads,
          gpuThread,
          gpuAdapter: options.gpuAdapter,
          ...(options.gpuTimeoutMs !== undefined ? { gpuTimeoutMs: options.gpuTimeoutMs } : {}),
          onWarning,
          ...(onAggregate ? { onAggregate: (k: number, metrics: Record<string, number>) => onAggregate(names[k]!, metrics) } : {}),
        });
      })();
      opening.catch(() => undefined);
      let refFormat: FrameFormat;
      try {
        const kinds = await Promise.all([reference, ...renditions.map((r) => r.input)].map(inputKind));
        if (scale) renditions.forEach((_, k) => kinds[k + 1] !== 'stream' && open(k));
        refFormat = await ref.format();
        mark('reference format');
        // What the extractors refuse of this format (libvmaf's refusals, such as CAMBI's minimum
        // size) is the run's error before any frame is read, never a race with the inputs' errors.
        plan.outputsFor(refFormat);
        options.onFormat?.(refFormat);
        if (scale) {
          const size = { width: refFormat.width, height: refFormat.height };
          for (const k of renditions.keys()) {
            // What cannot be read twice goes through the scaler from the start.
            if (kinds[k + 1] === 'stream') {
              open(k, size);
              continue;
            }
            if (kinds[k + 1] !== 'file') continue; // a FrameSource: as it is
            const format = await dis[k]!.format();
            if (format.width !== size.width || format.height !== size.height) {
              await dis[k]!.close();
              open(k, size);
            }
          }
        }
        // A live input may never end: never read one to its end just to count its frames.
        countRemaining = kinds.every((kind) => kind === 'file');
      } catch (error) {
        void opening.then((b) => b.close(), () => undefined);
        throw error;
      }
      // The inputs are open: the backend's warnings so far, and from here on as they come.
      const early = held;
      held = undefined;
      for (const message of early) userWarning?.(message);
      const backend = await opening;
      // Before any frame buffer exists: a pool the kernel would grant virtually and the OOM
      // killer take back is refused here, with its figures (pool/memory-budget.ts).
      try {
        const gpuStaged = backend.kind === 'gpu';
        // The staging ring's module (and the GPU device's it imports): the gpu backend has it loaded already.
        const stagingSlots = gpuStaged ? (await import('../pool/staging-ring.js')).DEFAULT_STAGING_DEPTH : 0;
        checkFrameMemory({
          label: labelOf(reference, 'reference'),
          format: refFormat,
          planes: sourceOptions.planes,
          sources: 1 + renditions.length,
          poolSlots: sourceOptions.poolSlots!,
          inFlight,
          stagingSlots,
          stagingSlotBytes: gpuStaged ? slotBytes(refFormat, sourceOptions.planes) : 0,
        });
      } catch (error) {
        await backend.close();
        throw error;
      }
      mark('backend open');
      // The kernels for the reference's frames compile while the first frames are read and staged.
      backend.prepare?.(refFormat);
      options.onBackend?.(backend);
      return { backend, models, countRemaining, qc: await qcLoading };
    })();

    let backend: FeatureBackend | undefined;
    let qc: RunQc | undefined;
    async function* grouped(): AsyncGenerator<FrameGroup, void, undefined> {
      const reference = ref!; // opened by `run`, which the groups are pulled after
      let refSource: FrameSource = reference;
      // Before alignment, so that it compares samples of the same depth.
      let disSources = await widenToReference(reference, dis as FrameSource[], options.onWarning);
      let frameSkipRef = options.frameSkipRef;
      let frameSkipDist: Array<number | undefined> = renditions.map((r) => r.frameSkip ?? options.frameSkipDist);
      if (aligning) {
        const { alignSources } = await import('../align/align-pairs.js');
        const aligned = await alignSources(reference, disSources, {
          modes,
          frameSkipRef,
          frameSkipDist,
          searchRange: options.alignRange,
          minDimension: MIN_FRAME_DIMENSION,
        });
        ({ ref: refSource, dis: disSources, frameSkipRef } = aligned);
        frameSkipDist = aligned.frameSkipDist;
        aligned.reports.forEach((report, k) => report && qc?.alignment(k, report));
      }
      // Where nothing on the host looks at the samples and the backend reads them itself,
      // the file inputs' frames come located: their bytes are read once, by the upload.
      if (!aligning && qc?.readsSamples !== true && backend?.readsLocatedFrames && locatedFramesAllowed()) {
        const format = await reference.format();
        if (await backend.readsLocatedFrames(format).catch(() => false)) for (const source of [refSource, ...disSources]) locateFrames(source);
      }
      for await (const group of groupFrames(refSource, disSources, {
        frameSkipRef,
        frameSkipDist,
        frameCnt: options.frameCnt,
        subsample: options.subsample,
        minDimension: MIN_FRAME_DIMENSION,
        onWarning: options.onWarning,
        countRemaining,
        planes: sourceOptions.planes,
      })) {
        qc?.observeGroup(group);
        yield group;
      }
      qc?.endGroups();
    }
    const groups: AsyncIterable<FrameGroup> = { [Symbol.asyncIterator]: grouped };

    return defer(() => run).pipe(
      mergeMap((opened) => {
        backend = opened.backend;
        countRemaining = opened.countRemaining;
        qc = opened.qc && new opened.qc.RunQc(options, { names, single, modelNames: opened.models.map((m) => m.name), inFlight, aligned: modes.map((mode) => mode !== undefined) });
        // The frame a backend failure stopped at: the one after the last that came back.
        let nextFrame = 0;
        const loseAt = testDeviceLossAt();
        const hangAt = testDeviceHangAt();
        const inputs = renditions.length === 1 ? renditions[0]!.label : `${labelOf(reference, 'reference')} and its renditions`;
        const results = opened.backend.extractMany(pullWithCredits(groups, credits)).pipe(
          tap((group) => {
            nextFrame = Math.max(nextFrame, group.index + 1);
            if (loseAt !== undefined && nextFrame === loseAt) loseDevice(opened.backend);
            if (hangAt !== undefined && nextFrame === hangAt) hangDevice(opened.backend);
          }),
          catchError((error: unknown) => throwError(() => backendErrorAt(error, inputs, nextFrame))),
          flatMapSync((group): Array<Delivery<LadderResult>> => {
            const present = group.renditions.flatMap((frame, k) => (frame ? [{ frame, k }] : []));
            // The group's credit comes back once each of its results has been delivered.
            if (present.length === 0) {
              credits.release();
              return [];
            }
            let left = present.length;
            const delivered = () => {
              if (--left === 0) credits.release();
            };
            return present.map(({ frame, k }) => ({
              result: { rendition: names[k]!, result: frameResult(frame, opened.models) },
              delivered: once(delivered),
            }));
          }),
        );
        return qc ? qc.attach(results) : results;
      }),
      finalize(() => {
        const closing = [ref, ...dis].map((source) => source?.close().catch(() => undefined));
        options.onInputsClosed?.(Promise.all(closing).then(() => undefined));
        if (!options.exitAfterRun) void backend?.close().catch(() => undefined);
      }),
    );
  });
}

/**
 * Each distorted input of lower bit depth than the reference, widened to its depth
 * (matchReferenceDepth, with its warning). Inputs whose format cannot be read, or whose size
 * differs, are left as they are: groupFrames and alignSources report those in their order.
 */
async function widenToReference(ref: FrameSource, dis: FrameSource[], onWarning: ((message: string) => void) | undefined): Promise<FrameSource[]> {
  const formats = await Promise.allSettled([ref.format(), ...dis.map((d) => d.format())]);
  if (formats.some((f) => f.status === 'rejected')) return dis;
  const [rf, ...dfs] = formats.map((f) => (f as PromiseFulfilledResult<FrameFormat>).value);
  return dis.map((d, k) => {
    const df = dfs[k]!;
    return df.width === rf!.width && df.height === rf!.height ? matchReferenceDepth(ref, rf!, d, df, onWarning) : d;
  });
}

function frameResult(frame: FrameFeatures, models: Model[]): FrameResult {
  return {
    index: frame.index,
    features: frame.features,
    scores: predictAll(models, frame.features),
    refPts: frame.refPts,
    disPts: frame.disPts,
  };
}

/**
 * 'file': a regular file (read twice at will); 'stream': standard input, a named pipe, a
 * device, a URL or other ffmpeg protocol, a Readable (read once, maybe never ending);
 * 'source': a FrameSource (taken as it is).
 */
async function inputKind(input: FrameInput): Promise<'file' | 'stream' | 'source'> {
  if (isFrameSource(input)) return 'source';
  if (typeof input !== 'string' || input === '-') return 'stream';
  try {
    return (await stat(input)).isFile() ? 'file' : 'stream';
  } catch {
    // Not on disk: a URL or protocol (ffmpeg), or missing (the source reports that).
    return /^[a-z][a-z0-9+.-]+:/i.test(input) ? 'stream' : 'file';
  }
}

function predictAll(models: Model[], features: FrameResult['features']): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const model of models) Object.assign(scores, model.predict(features));
  return scores;
}

/** A command's label; undefined where it has none yet (its error, e.g. several unnamed outputs, comes when the run opens it). */
function transcodeLabel(input: TranscodeInput | FluentCommand): string | undefined {
  try {
    const label = asTranscodeInput(input).label;
    return label === 'transcode' ? undefined : label;
  } catch {
    return undefined;
  }
}

export function labelOf(input: FrameInput, fallback: string): string {
  if (typeof input === 'string') return input;
  if (isFluentCommand(input)) return transcodeLabel(input) ?? fallback;
  if (typeof input === 'object' && input !== null && 'label' in input && typeof input.label === 'string') return input.label;
  return fallback;
}

function defaultThreads(): number {
  const fromEnv = Number(process.env.VMAF_THREADS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : availableParallelism();
}

function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (!called) {
      called = true;
      fn();
    }
  };
}

/**
 * Scores a ladder: every rendition against one reference, decoded once. One LadderResult
 * per rendition and frame, as soon as it is known (one frame after the frame arrives), in
 * frame order, each frame's renditions in the order given. Renditions of another size are
 * scaled to the reference's unless `scale: false`. Each rendition's results are exactly
 * those of score(reference, rendition) (with scale on where its size differs).
 */
export function scoreLadder(reference: FrameInput, renditions: readonly RenditionInput[], options: LadderOptions = {}): Observable<LadderResult> {
  return scoreLadderDeliveries(reference, renditions, options).pipe(
    map((delivery) => {
      delivery.delivered();
      return delivery.result;
    }),
  );
}

/**
 * scoreLadder() for consumers that take results at their own pace (see scoreDeliveries).
 * `single`: one rendition scored as a single pair (its QC notices carry no rendition).
 */
export function scoreLadderDeliveries(reference: FrameInput, renditions: readonly RenditionInput[], options: LadderOptions = {}, single = false): Observable<Delivery<LadderResult>> {
  return defer(() => runLadder(reference, resolveRenditions(renditions), { ...options, scale: options.scale ?? true }, single));
}
