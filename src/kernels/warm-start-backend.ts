/**
 * The gpu backend's warm start. Opening the GPU (Dawn's adapter and device, then the
 * kernels) takes about a third of a second: as long as libvmaf's CUDA path takes for a whole
 * 100-frame clip. Meanwhile the cpu backend, which gives the same values bit for bit,
 * scores the first frames:
 *
 *   groups 0 … h-1        cpu only
 *   groups h … m          both: the gpu backend, once open, first gets the last `previous`
 *                         groups again, unscored (its temporal features' history, as a
 *                         queue segment's neighbours), then every group; the cpu goes on
 *   the gpu's first result for a group ≥ h (it has then been given h + next, and so has
 *   the cpu, up to some m): the cpu is given nothing more. Its results count for the groups
 *   before c = m + 1 - next (each has had its lookahead; c is past any result the cpu has
 *   already given), the gpu's from c on.
 *   groups m+1 …          gpu only
 *
 * The cpu races the gpu until the gpu answers, so neither waits for the other; a clip that
 * ends before the GPU is open is scored on the cpu alone. One result comes out per group
 * given, in order: the gpu's results wait (bounded by the run's credits) until the cpu's
 * last one is out. Plans whose extractors accumulate over the run (APSNR) are not split
 * (warmStartFits in create-backend.ts).
 */
import { Observable, Subject, type Subscription } from '../rx.js';
import type { BackendKind, FeatureBackend } from './backend.js';
import { extractPairs } from './backend.js';
import type { NeighbourFrames } from '../extractors/extractor.js';
import type { Frame, FrameFeatures, FrameFormat, FrameGroup, FramePair, GroupFeatures } from '../types.js';
import { SharedFrame } from '../pool/shared-frame.js';
import type { GpuDevice } from './gpu/device.js';
import type { CoreRuns } from './core-parts.js';
import { mark } from '../trace.js';

export interface WarmStartOptions {
  /** What the run's features need of neighbouring frames (the plan's). */
  neighbours: NeighbourFrames;
  /**
   * A gpu backend that cannot open fails the run (`--backend gpu`); otherwise (`auto`) the
   * run goes on on the cpu, with a warning. An opening that gives a cpu backend (`auto` on a
   * machine without a hardware adapter) is closed, silently.
   */
  gpuRequired: boolean;
  onWarning?: ((message: string) => void) | undefined;
  /**
   * Groups given to the cpu before the GPU starts opening (default 1). Opening it holds
   * the main thread for a while (Dawn's adapter and device are made synchronously), so the
   * cpu's threads are first given work to go on with; a clip that ends first never opens it.
   */
  primeGroups?: number;
}

/** Where the frames of a run went: the cpu's up to `cpuUntil` (exclusive), the gpu's after. */
export interface WarmStartSplit {
  /** The first group scored on the gpu; undefined while the cpu scores them all (or did). */
  gpuFrom: number | undefined;
}

/** One frame group shared by the backends it is given to: a view of each frame per backend. */
class SharedGroup {
  private readonly shares: Map<Frame, SharedFrame>;
  constructor(readonly group: FrameGroup) {
    this.shares = new Map();
    for (const frame of [group.ref, ...group.dis]) if (frame && !this.shares.has(frame)) this.shares.set(frame, new SharedFrame(frame));
  }
  /** The group with a view of each frame, for one reader; `scored` overrides the group's. */
  view(scored?: boolean): FrameGroup {
    const views = new Map<Frame, Frame>();
    const viewOf = (frame: Frame): Frame => {
      let v = views.get(frame);
      if (!v) views.set(frame, (v = this.shares.get(frame)!.view()));
      return v;
    };
    const out: FrameGroup = { ...this.group, ref: viewOf(this.group.ref), dis: this.group.dis.map((f) => f && viewOf(f)) };
    if (scored !== undefined) out.scored = scored;
    return out;
  }
  /** Gives back the arrival's share (the views keep theirs). */
  release(): void {
    for (const s of this.shares.values()) s.release();
  }
}

export class WarmStartBackend implements FeatureBackend {
  readonly kind: BackendKind = 'gpu';
  private gpu: FeatureBackend | undefined;
  private gpuError: unknown;
  private format: FrameFormat | undefined;
  private closed = false;
  private opened: Promise<void> | undefined;
  private readonly split: WarmStartSplit = { gpuFrom: undefined };

  constructor(
    private readonly cpu: FeatureBackend,
    private readonly openGpu: () => Promise<FeatureBackend>,
    private readonly options: WarmStartOptions,
  ) {}

  /** Starts opening the gpu backend (once). */
  private startOpening(): void {
    if (this.opened || this.closed) return;
    mark('warm start: opening the gpu backend');
    this.opened = this.openGpu().then(
      async (backend) => {
        if (this.closed || backend.kind !== 'gpu') {
          await backend.close();
          return;
        }
        this.gpu = backend;
        mark('warm start: gpu backend open');
        if (this.format) backend.prepare?.(this.format);
      },
      (error: unknown) => {
        if (this.options.gpuRequired) this.gpuError = error;
        else this.options.onWarning?.(`cannot use the GPU (${error instanceof Error ? error.message : String(error)}); using the cpu backend`);
      },
    );
  }

  get description(): string {
    const from = this.split.gpuFrom;
    if (this.gpu && from !== undefined) return `${this.gpu.description} (frames before ${from} on the ${this.cpu.description} while it opened)`;
    return this.gpu ? this.gpu.description : `${this.cpu.description} (the GPU opening)`;
  }

  /** Where the run's frames were scored (for messages and tests). */
  warmStartSplit(): WarmStartSplit {
    return { ...this.split };
  }

  extract(pairs: Observable<FramePair>): Observable<FrameFeatures> {
    return extractPairs(this, pairs);
  }

  extractMany(groups: Observable<FrameGroup>): Observable<GroupFeatures> {
    return new Observable<GroupFeatures>((subscriber) => {
      const { previous, next } = this.options.neighbours;
      const cpuIn = new Subject<FrameGroup>();
      let gpuIn: Subject<FrameGroup> | undefined;
      let gpuRun: Subscription | undefined;
      // The last `previous` groups given to the cpu, held for the gpu's history.
      let history: SharedGroup[] = [];
      let lastToCpu = -1;
      let lastFromCpu = -1;
      let toCpu = 0;
      const prime = this.options.primeGroups ?? 1;
      let firstToGpu: number | undefined; // h
      let cut: number | undefined; // c: the first group whose result is the gpu's
      let cpuDone = false;
      let gpuDone = false;
      let sourceDone = false;
      const waiting: GroupFeatures[] = []; // the gpu's results, until the cpu's last is out
      const subscriptions: Subscription[] = [];
      const fail = (error: unknown): void => subscriber.error(error);
      const finishIfDone = (): void => {
        if (cpuDone && (gpuIn === undefined || gpuDone) && sourceDone) subscriber.complete();
      };
      const dropHistory = (): void => {
        for (const held of history) held.release();
        history = [];
      };
      const stopCpu = (at: number): void => {
        cut = at;
        if (Number.isFinite(at)) this.split.gpuFrom = at;
        dropHistory();
        cpuIn.complete();
      };

      subscriptions.push(
        this.cpu.extractMany(cpuIn).subscribe({
          next: (group) => {
            if (cut !== undefined && group.index >= cut) return;
            lastFromCpu = group.index;
            subscriber.next(group);
          },
          error: fail,
          complete: () => {
            cpuDone = true;
            mark('warm start: cpu done');
            for (const group of waiting.splice(0)) subscriber.next(group);
            finishIfDone();
          },
        }),
      );

      /** Gives the gpu backend its history (the groups before, again, unscored) and takes its results. */
      const startGpu = (gpu: FeatureBackend): void => {
        const input = (gpuIn = new Subject<FrameGroup>());
        subscriptions.push(
          (gpuRun = gpu.extractMany(input).subscribe({
            next: (group) => {
              if (cut === undefined) {
                // The gpu answers for a group it scores: the cpu stops where its results are final.
                if (firstToGpu === undefined || group.index < firstToGpu) return;
                stopCpu(Math.max(lastToCpu + 1 - next, firstToGpu, lastFromCpu + 1));
                mark(`warm start: frames from ${cut} on the gpu (first to the gpu ${firstToGpu}, last to the cpu ${lastToCpu}, last from it ${lastFromCpu})`);
              }
              if (group.index < cut!) return;
              if (cpuDone) subscriber.next(group);
              else waiting.push(group);
            },
            error: fail,
            complete: () => {
              gpuDone = true;
              finishIfDone();
            },
          })),
        );
        for (const held of history) input.next(held.view(false));
        dropHistory();
      };

      subscriptions.push(
        groups.subscribe({
          next: (group) => {
            if (this.gpuError !== undefined) {
              releaseGroup(group);
              fail(this.gpuError);
              return;
            }
            if (cut !== undefined) {
              gpuIn!.next(group);
              return;
            }
            if (!gpuIn && this.gpu) {
              // Even when it opened before the first frame came, the cpu goes on until the
              // gpu answers: its kernels may still be compiling.
              firstToGpu = group.index;
              startGpu(this.gpu);
            }
            const shared = new SharedGroup(group);
            lastToCpu = group.index;
            cpuIn.next(shared.view());
            if (++toCpu >= prime) this.startOpening();
            gpuIn?.next(shared.view());
            if (!gpuIn && previous > 0) {
              history.push(shared);
              if (history.length > previous) history.shift()!.release();
            } else {
              shared.release();
            }
          },
          error: fail,
          complete: () => {
            sourceDone = true;
            mark('warm start: source done');
            if (cut === undefined) {
              // Ended before the gpu answered: the cpu has every group, the gpu's work is dropped.
              stopCpu(Number.POSITIVE_INFINITY);
              gpuRun?.unsubscribe();
              gpuDone = true;
            } else {
              gpuIn?.complete();
            }
            finishIfDone();
          },
        }),
      );
      return () => {
        for (const s of subscriptions.splice(0).reverse()) s.unsubscribe();
        dropHistory();
      };
    });
  }

  gpuDevice(): GpuDevice | undefined {
    return this.gpu?.gpuDevice?.();
  }

  coreRuns(): CoreRuns | undefined {
    return this.gpu?.coreRuns?.() ?? this.cpu.coreRuns?.();
  }

  prepare(format: FrameFormat): void {
    this.format = format;
    this.cpu.prepare?.(format);
    this.gpu?.prepare?.(format);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.cpu.close();
    // A gpu backend still opening is closed once it is open, without holding this up.
    if (this.gpu) await this.gpu.close();
    else void this.opened?.then(() => this.gpu?.close());
  }
}

function releaseGroup(group: FrameGroup): void {
  for (const frame of new Set([group.ref, ...group.dis])) frame?.release();
}
