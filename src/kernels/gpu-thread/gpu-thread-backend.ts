/**
 * The gpu backend on a thread of its own: a FeatureBackend on the main thread whose streams
 * run in a worker thread (gpu-thread-worker.ts), where the run's backend (createPlanBackend)
 * opens the GPU and computes every frame exactly as it would on the main thread.
 *
 * Why: on a fast GPU the host is the limit, and on one thread its two halves take turns:
 * reading the inputs, pairing, the models and the writers on one side, Dawn's calls
 * (encoding, submits, maps, the readback) and the staging copies on the other. Here they
 * overlap, and Dawn's adapter, device and kernels open while the main thread opens the
 * inputs.
 *
 *   main thread                                    gpu thread
 *   groups ──► ids, planes (shared memory) ──────► backend.extractMany ──► GroupFeatures
 *   frame.release() ◄── released ids ◄──────────── Frame.release()
 *
 * Frames are never copied: pool slots are SharedArrayBuffers, and a frame is released on the
 * main thread when the gpu thread releases its id (a caller's frame in ordinary memory is
 * copied once into shared memory and released at once). The pool's bound holds as before:
 * a frame is out until the gpu thread is done with it.
 */
import type { Worker } from 'node:worker_threads';
import { takeGpuThread } from './prestart.js';
import { Observable, type Subscriber } from '../../rx.js';
import type { Frame, FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../../types.js';
import { BackendError } from '../../errors.js';
import { sameFormat } from '../../decode/frame-layout.js';
import { extractPairs, type BackendKind, type FeatureBackend } from '../backend.js';
import type { CoreRuns } from '../core-parts.js';
import type { RunPlan } from '../../extractors/plan.js';
import { extractorByName } from '../../extractors/registry.js';
import { dawnDiagnosticsShownNow } from '../gpu/device.js';
import { mark } from '../../trace.js';
import { fromWireError, sharedPlanes, wireGroup, type FromThread, type ThreadInit, type ToThread, type WireFrame } from './wire.js';

/** What the thread's backend is opened with: createPlanBackend's options, those that cross to the thread. */
export interface GpuThreadOptions {
  threads: number;
  gpuAdapter?: string | undefined;
  gpuTimeoutMs?: number | undefined;
  onWarning?: ((message: string) => void) | undefined;
  onAggregate?: ((k: number, metrics: Record<string, number>) => void) | undefined;
}

/** Whether every extractor of the plan is a registered one, which the gpu thread can plan again by name. */
export function planGoesToThread(plan: RunPlan): boolean {
  return plan.requests.every((r) => extractorByName(r.definition.name) === r.definition);
}

/**
 * Opens the plan's backend on a gpu thread. Resolves to undefined when `kind` is 'auto' and
 * the thread found no GPU to use (the caller opens the cpu backend here instead); rejects as
 * createPlanBackend would.
 */
export async function openGpuThread(plan: RunPlan, kind: BackendKind | 'auto', options: GpuThreadOptions): Promise<GpuThreadBackend | undefined> {
  const init: ThreadInit = {
    requests: plan.requests.map((r) => ({ name: r.definition.name, options: r.options })),
    kind,
    threads: options.threads,
    gpuAdapter: options.gpuAdapter,
    gpuTimeoutMs: options.gpuTimeoutMs,
    aggregates: options.onAggregate !== undefined,
    dawnDiagnostics: dawnDiagnosticsShownNow(),
  };
  // A thread the command line started early (prestart.ts) if there is one: it has its modules loaded.
  const worker = takeGpuThread();
  worker.postMessage({ type: 'init', init } satisfies ToThread);
  mark('gpu thread taken');
  const backend = new GpuThreadBackend(worker, options);
  await backend.opened;
  if (backend.kind !== 'gpu') {
    await backend.close();
    return undefined;
  }
  return backend;
}

interface Stream {
  subscriber: Subscriber<GroupFeatures>;
  /** Stops reading the groups (the stream has ended on the gpu thread, or was torn down). */
  stop(): void;
}

export class GpuThreadBackend implements FeatureBackend {
  kind: BackendKind = 'gpu';
  description = 'gpu';
  /** Resolves once the gpu thread's backend is open; rejects with its error. */
  readonly opened: Promise<void>;

  readonly #worker: Worker;
  readonly #options: GpuThreadOptions;
  /** Frames the gpu thread holds, by id. */
  readonly #frames = new Map<number, Frame>();
  readonly #streams = new Map<number, Stream>();
  #nextFrame = 0;
  #nextStream = 0;
  /** readsLocatedFrames questions waiting for the thread's answer, by id. */
  readonly #questions = new Map<number, (reads: boolean) => void>();
  #nextQuestion = 0;
  /** The last question asked, and its answer to come. */
  #asked: { format: FrameFormat; reads: Promise<boolean> } | undefined;
  #coreRuns: CoreRuns | undefined;
  /** Set once the thread has stopped or failed: every later call fails with it. */
  #broken: Error | undefined;
  #closing: Promise<void> | undefined;
  #exited: Promise<void>;

  constructor(worker: Worker, options: GpuThreadOptions) {
    this.#worker = worker;
    this.#options = options;
    let ready!: () => void;
    let failed!: (error: Error) => void;
    this.opened = new Promise<void>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    });
    this.opened.catch(() => undefined);
    worker.on('message', (message: FromThread) => {
      switch (message.type) {
        case 'ready':
          this.kind = message.kind;
          this.description = message.description;
          ready();
          this.#idle();
          return;
        case 'failed':
          failed(fromWireError(message.error));
          return;
        default:
          this.#receive(message);
      }
    });
    worker.on('error', (error) => {
      const broken = new BackendError('E_GPU', `the gpu thread failed: ${error.message}`, { cause: error });
      failed(broken);
      this.#fail(broken);
    });
    this.#exited = new Promise<void>((resolve) => {
      worker.once('exit', (code) => {
        const broken = new BackendError('E_GPU', `the gpu thread ended (exit code ${code})`);
        failed(broken);
        this.#fail(broken);
        resolve();
      });
    });
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      if (this.#broken || this.#closing) {
        subscriber.error(this.#broken ?? new BackendError('E_GPU', 'the gpu backend is closed'));
        return undefined;
      }
      const stream = this.#nextStream++;
      this.#worker.ref(); // the thread's answers keep the process alive while a stream runs
      this.#post({ type: 'extract', stream });
      let live = true;
      const end = (cancel: boolean): void => {
        if (!live) return;
        live = false;
        reading.unsubscribe();
        this.#streams.delete(stream);
        if (cancel && !this.#broken) this.#post({ type: 'cancel', stream });
        this.#idle();
      };
      this.#streams.set(stream, { subscriber, stop: () => end(false) });
      const reading = groups.subscribe({
        next: (group) => {
          if (!live) return releaseGroup(group);
          this.#post({ type: 'group', stream, group: wireGroup(group, (frame) => this.#share(frame)) });
          if (group.index % 10 === 0) mark(`group ${group.index} posted`);
        },
        error: (error: unknown) => {
          end(true);
          subscriber.error(error);
        },
        complete: () => {
          if (live) this.#post({ type: 'end', stream });
        },
      });
      return () => end(true);
    });
  }

  prepare(format: FrameFormat): void {
    if (this.#broken || this.#closing) return;
    // Asked first: preparing holds the thread in Dawn's synchronous shader compilation, and the
    // run's first frames wait for this answer (ladder.ts), not for the kernels.
    void this.readsLocatedFrames(format);
    this.#post({ type: 'prepare', format });
  }

  /** The thread's backend answers (FeatureBackend.readsLocatedFrames), once per format; false once the thread is gone. */
  readsLocatedFrames(format: FrameFormat): Promise<boolean> {
    if (this.#broken || this.#closing) return Promise.resolve(false);
    const asked = this.#asked;
    if (asked && sameFormat(asked.format, format)) return asked.reads;
    const id = this.#nextQuestion++;
    const reads = new Promise<boolean>((resolve) => {
      this.#questions.set(id, resolve);
      this.#post({ type: 'locatable', id, format });
    });
    this.#asked = { format, reads };
    return reads;
  }

  coreRuns(): CoreRuns | undefined {
    return this.#coreRuns;
  }

  /** The test hooks of pipeline/backend-fault.ts, on the gpu thread's device. */
  testFault(fault: 'lose' | 'hang'): void {
    if (!this.#broken) this.#post({ type: 'fault', fault });
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (!this.#broken) {
        const closed = new Promise<void>((resolve) => {
          const onMessage = (message: FromThread): void => {
            if (message.type !== 'closed') return;
            this.#worker.off('message', onMessage);
            resolve();
          };
          this.#worker.on('message', onMessage);
        });
        this.#worker.ref();
        this.#post({ type: 'close' });
        await Promise.race([closed, this.#exited]);
      }
      await this.#worker.terminate();
      await this.#exited;
      this.#releaseAll();
    })();
    return this.#closing;
  }

  #receive(message: FromThread): void {
    switch (message.type) {
      case 'features':
        this.#streams.get(message.stream)?.subscriber.next(message.group);
        return;
      case 'release':
        for (const id of message.ids) {
          const frame = this.#frames.get(id);
          this.#frames.delete(id);
          frame?.release();
        }
        return;
      case 'complete':
      case 'error': {
        this.#coreRuns = message.coreRuns;
        const stream = this.#streams.get(message.stream);
        if (!stream) return;
        stream.stop();
        if (message.type === 'complete') stream.subscriber.complete();
        else stream.subscriber.error(fromWireError(message.error));
        return;
      }
      case 'locatable':
        this.#questions.get(message.id)?.(message.reads);
        this.#questions.delete(message.id);
        return;
      case 'warning':
        this.#options.onWarning?.(message.message);
        return;
      case 'aggregate':
        this.#options.onAggregate?.(message.rendition, message.metrics);
        return;
    }
  }

  /** The frame as the thread gets it, held here under its id until the thread releases it. */
  #share(frame: Frame): WireFrame {
    const id = this.#nextFrame++;
    const { luma, chroma, copied } = sharedPlanes(frame);
    if (copied) frame.release();
    else this.#frames.set(id, frame);
    const wire: WireFrame = { id, index: frame.index, format: frame.format, luma };
    if (chroma) wire.chroma = chroma;
    if (frame.pts !== undefined) wire.pts = frame.pts;
    if (frame.located) wire.located = frame.located;
    return wire;
  }

  #post(message: ToThread): void {
    this.#worker.postMessage(message);
  }

  /** Lets the process end while no stream runs (a backend left open does not hold it). */
  #idle(): void {
    if (this.#streams.size === 0 && !this.#closing) this.#worker.unref();
  }

  #fail(error: Error): void {
    if (this.#broken) return;
    this.#broken = error;
    for (const stream of [...this.#streams.values()]) {
      stream.stop();
      stream.subscriber.error(error);
    }
    this.#releaseAll();
  }

  /** The thread is gone: the frames it held are the main thread's to give back, its questions answered no. */
  #releaseAll(): void {
    for (const answer of this.#questions.values()) answer(false);
    this.#questions.clear();
    const frames = [...this.#frames.values()];
    this.#frames.clear();
    for (const frame of frames) frame.release();
  }
}

function releaseGroup(group: FrameGroup): void {
  for (const frame of new Set([group.ref, ...group.dis])) frame?.release();
}
