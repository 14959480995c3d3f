/**
 * The gpu thread (a worker_threads Worker that gpu-thread-backend.ts starts): it opens the
 * run's backend (createPlanBackend: the GPU device, its kernels, the registered extractors)
 * and runs its streams, so that Dawn's calls (encoding, submits, maps, the readback) and the
 * staging copies no longer share the main thread with reading the inputs, the models and
 * the writers.
 *
 * Frames come in as views of their shared memory (wire.ts) and go back as ids once the
 * backend has released them; features, warnings, aggregates and errors go back as messages.
 * Started before its run (prestart.ts), it opens the device its run will ask for meanwhile.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Subject, type Subscription } from '../../rx.js';
import type { FrameGroup } from '../../types.js';
import type { FeatureBackend } from '../backend.js';
import { createPlanBackend } from '../create-backend.js';
import { planRun } from '../../extractors/plan.js';
import { extractorByName } from '../../extractors/registry.js';
import { hangDevice, loseDevice } from '../../pipeline/backend-fault.js';
import { discardPreopenedDevice, hasHardwareAdapter, showDawnDiagnostics } from '../gpu/device.js';
import { GpuBackend } from '../gpu/gpu-backend.js';
import { mark } from '../../trace.js';
import { toWireError, unwireGroup, type FromThread, type ThreadInit, type ThreadStart, type ToThread } from './wire.js';

mark('modules loaded');
const port = parentPort!;
// This thread's environment is its own copy: a forced VMAF_STREAM_GPU_THREAD=1 must not start another thread from here.
process.env.VMAF_STREAM_GPU_THREAD = '0';
const post = (message: FromThread): void => port.postMessage(message);

// Released frame ids go back together, once per turn of this thread's microtasks.
let released: number[] = [];
const release = (id: number): void => {
  if (released.length === 0) {
    queueMicrotask(() => {
      const ids = released;
      released = [];
      post({ type: 'release', ids });
    });
  }
  released.push(id);
};

const streams = new Map<number, { input: Subject<FrameGroup>; subscription: Subscription }>();
let backend: FeatureBackend | undefined;
// Messages that came while the backend was opening: handled, in order, once it is open.
let early: ToThread[] | undefined = [];

function handle(message: ToThread): void {
  const open = backend!;
  switch (message.type) {
    case 'extract': {
      const { stream } = message;
      const input = new Subject<FrameGroup>();
      const entry = { input, subscription: undefined as unknown as Subscription };
      streams.set(stream, entry);
      entry.subscription = open.extractMany(input).subscribe({
        next: (group) => post({ type: 'features', stream, group }),
        error: (error: unknown) => {
          streams.delete(stream);
          post({ type: 'error', stream, error: toWireError(error), coreRuns: open.coreRuns?.() });
        },
        complete: () => {
          streams.delete(stream);
          post({ type: 'complete', stream, coreRuns: open.coreRuns?.() });
        },
      });
      return;
    }
    case 'group': {
      const group = unwireGroup(message.group, release);
      const entry = streams.get(message.stream);
      if (entry) entry.input.next(group);
      else for (const frame of new Set([group.ref, ...group.dis])) frame?.release(); // the stream has already failed
      return;
    }
    case 'end':
      streams.get(message.stream)?.input.complete();
      return;
    case 'cancel': {
      const entry = streams.get(message.stream);
      streams.delete(message.stream);
      entry?.subscription.unsubscribe();
      return;
    }
    case 'prepare':
      open.prepare?.(message.format);
      return;
    case 'locatable': {
      const { id } = message;
      const asked = open.readsLocatedFrames?.(message.format) ?? Promise.resolve(false);
      void asked.catch(() => false).then((reads) => post({ type: 'locatable', id, reads }));
      return;
    }
    case 'fault':
      if (message.fault === 'lose') loseDevice(open);
      else hangDevice(open);
      return;
    case 'close':
      for (const entry of streams.values()) entry.subscription.unsubscribe();
      streams.clear();
      void open.close().finally(() => {
        post({ type: 'closed' });
        port.close();
      });
      return;
  }
}

/**
 * Started ahead of its run: opens the device the run's backend will ask for (GpuBackend.open's
 * options for this backend kind; `auto` only where a hardware adapter exists, as
 * openHardwareGpu decides), while the run reads its inputs. Its errors are the run's, later.
 */
async function preopen(start: ThreadStart): Promise<void> {
  showDawnDiagnostics(start.dawnDiagnostics);
  const options = { adapter: start.gpuAdapter, ...(start.gpuTimeoutMs !== undefined ? { fenceTimeoutMs: start.gpuTimeoutMs } : {}) };
  if (start.kind === 'gpu') GpuBackend.preopen(options);
  else if (start.kind === 'auto' && (start.gpuAdapter === undefined || start.gpuAdapter === '') && (await hasHardwareAdapter())) {
    GpuBackend.preopen({ ...options, requireHardware: true });
  }
}
const start = workerData as ThreadStart | null;
const preopening = start ? preopen(start).catch(() => undefined) : Promise.resolve();

// The run comes first ('init'): the thread may have been started before the run knew it wanted it (prestart.ts).
let started!: (init: ThreadInit) => void;
const initialized = new Promise<ThreadInit>((resolve) => (started = resolve));
port.on('message', (message: ToThread) => {
  if (message.type === 'init') started(message.init);
  else if (message.type === 'discard') {
    // No run for this thread: its device closed, it ends (nothing of Dawn's left pending).
    void preopening.then(discardPreopenedDevice).finally(() => process.exit(0));
  } else if (early) early.push(message);
  else handle(message);
});

const init = await initialized;
await preopening;
showDawnDiagnostics(init.dawnDiagnostics);
try {
  const plan = planRun(
    init.requests.map(({ name, options }) => {
      const definition = extractorByName(name);
      if (!definition) throw new Error(`gpu thread: no extractor named ${name}`);
      return { definition, options };
    }),
  );
  backend = await createPlanBackend(plan, init.kind, {
    threads: init.threads,
    gpuAdapter: init.gpuAdapter,
    ...(init.gpuTimeoutMs !== undefined ? { gpuTimeoutMs: init.gpuTimeoutMs } : {}),
    onWarning: (message) => post({ type: 'warning', message }),
    ...(init.aggregates ? { onAggregate: (rendition: number, metrics: Record<string, number>) => post({ type: 'aggregate', rendition, metrics }) } : {}),
    gpuThread: false, // this is the thread
  });
  await discardPreopenedDevice(); // one the run did not ask for (other options than the command line's)
  post({ type: 'ready', kind: backend.kind, description: backend.description });
  const queued = early;
  early = undefined;
  for (const message of queued) handle(message);
} catch (error) {
  post({ type: 'failed', error: toWireError(error) });
  port.close();
}
