/**
 * Starting the gpu thread before the run knows whether it wants it. A worker's own start (a
 * Node environment and its modules: about 85-110 ms on the H100 machine) would otherwise come
 * after the run's plan, on the way to the device; started from the raw arguments as the
 * process starts (cli/early-gpu-thread.ts), it overlaps the command line's modules, the
 * models and the reference's header.
 *
 * A prestarted thread loads its modules and opens the GPU device the run will ask for (the
 * command line knows the backend, adapter and timeout), then waits for its run ('init',
 * wire.ts). A thread the run does not take (a short run on the cpu backend, a run the thread
 * does not pay for) is told to close that device and end ('discard'). It holds the process
 * open for no one (unref). This module imports almost nothing else of vmaf-stream's, so that
 * it costs nothing to load early.
 *
 * The process ends with _exit while a gpu thread runs, once its 'exit' listeners have run:
 * process.exit() (and a natural end) would first have each worker thread tear its environment
 * down, and the gpu thread's teardown destroys Dawn's device object by object (about 0.2 s on
 * the H100), aborting the process where a Dawn promise is still pending (a kernel compiling,
 * a device opening); the kernel reclaims it all at once. The listeners registered after this
 * one run first, as they would have. Standard streams are synchronous on Linux: nothing
 * written is lost.
 */
import { Worker } from 'node:worker_threads';
import { mark } from '../../trace.js';
import { loadNative } from '../native.js';
import type { ThreadStart } from './wire.js';

/** Defined in the bundled command line (scripts/bundle-cli.mjs): its bundled worker, relative to this module's place in dist/. */
declare const VMAF_STREAM_BUNDLED_WORKER: string | undefined;

/** The gpu thread's module: the bundled one under the bundled command line (fewer files to load), else dist's. */
function workerModule(): URL {
  const bundled = typeof VMAF_STREAM_BUNDLED_WORKER === 'string' ? VMAF_STREAM_BUNDLED_WORKER : undefined;
  return new URL(bundled ?? './gpu-thread-worker.js', import.meta.url);
}

let spare: Worker | undefined;
/** Gpu threads running in this process. */
let running = 0;
let exitHooked = false;

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const onExit = (code: number): void => {
    if (running === 0) return;
    // The addon is loaded here, not at start-up: a gpu run's main thread needs it for nothing else.
    let exitNow: ((code: number) => never) | undefined;
    try {
      exitNow = loadNative().exitNow;
    } catch {
      exitNow = undefined;
    }
    if (!exitNow) return; // no addon, or one without it: the slower teardown
    const listeners = process.listeners('exit');
    for (const listener of listeners.slice(listeners.indexOf(onExit) + 1)) listener.call(process, code);
    const status = process.exitCode ?? code;
    exitNow(typeof status === 'number' ? status : Number(status) || 0);
  };
  process.on('exit', onExit);
}

/** A gpu thread waiting for its run (its 'init' message), opening `start`'s device meanwhile. */
export function startGpuThread(start?: ThreadStart): Worker {
  const worker = new Worker(workerModule(), { workerData: start ?? null });
  running++;
  hookExit();
  worker.once('exit', () => running--);
  return worker;
}

/** VMAF_STREAM_GPU_THREAD=1 or 0, where set (for measurements): the gpu thread forced on or off; undefined otherwise. */
export function gpuThreadForced(): boolean | undefined {
  const forced = process.env.VMAF_STREAM_GPU_THREAD;
  return forced === undefined || forced === '' ? undefined : !/^(0|false|no)$/i.test(forced);
}

/**
 * 1080p frames (over every rendition) from which a run takes the gpu thread where none was
 * started early (short-run.ts gpuThreadPays), and from which `auto` starts it early
 * (cli/early-gpu-thread.ts).
 */
export const THREAD_FRAMES = 300;

/** Whether a prestarted thread waits for a run to take it. */
export function hasPrestartedGpuThread(): boolean {
  return spare !== undefined;
}

/**
 * Starts a gpu thread for a run to come that may open a GPU, opening the device `start` says,
 * unless the thread is turned off (VMAF_STREAM_GPU_THREAD=0) or one is waiting already.
 */
export function prestartGpuThread(start: ThreadStart): void {
  if (spare || gpuThreadForced() === false) return;
  const worker = startGpuThread(start);
  mark('gpu thread started');
  worker.unref();
  worker.on('error', () => undefined); // a thread nobody took: its failure is nobody's
  worker.once('exit', () => {
    if (spare === worker) spare = undefined;
  });
  spare = worker;
}

/** The prestarted thread, for a run to take (once), or a new one. */
export function takeGpuThread(): Worker {
  const worker = spare;
  spare = undefined;
  if (!worker) return startGpuThread();
  worker.removeAllListeners('error');
  worker.ref(); // the run waits on it now
  return worker;
}

/** Ends the prestarted thread if no run took it (the run is not a threaded gpu run): it closes its device and ends. */
export function discardGpuThread(): void {
  const worker = spare;
  spare = undefined;
  worker?.postMessage({ type: 'discard' });
}
