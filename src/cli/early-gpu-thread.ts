/**
 * The GPU's start, begun from the raw arguments before the command line loads its modules.
 * Opening Dawn's adapter and device blocks the thread that asks (about 80 ms each on the H100
 * machine), and a worker's own start takes about 100 ms more. Begun here, in the process's
 * first milliseconds, they overlap the main thread's module loading, the argument checks,
 * the models and the inputs' headers, rather than following them:
 *   - the GPU driver is loaded on a native thread (the addon's prewarmVulkan), so that
 *     Dawn's first adapter finds it ready, on whichever thread asks;
 *   - the gpu thread is started (prestart.ts), and opens the device the run will ask for.
 *     A run takes it where one was started (short-run.ts gpuThreadPays).
 *
 * Only the option table's parse runs here (options.ts): a command line it rejects, a queue
 * command or a run on the cpu backend starts nothing, and the full parse reports what is
 * wrong as before. `auto` starts both only for a run that is not short by its arguments
 * alone (shortByArguments); a thread started for a run that turns out not to want it is
 * ended by the run (prestart.ts discardGpuThread).
 */
import { statSync } from 'node:fs';
import { parseSeconds, parseValues, QUEUE_COMMANDS, type CliValues } from './options.js';
import type { ThreadStart } from '../kernels/gpu-thread/wire.js';

/** What a command line starts early: nothing, the driver's loading, or that and the gpu thread. */
export interface EarlyStart {
  prewarm: boolean;
  thread: ThreadStart | undefined;
}

/** What the decision reads of the machine and of prestart.ts (tests give their own). */
export interface EarlyProbe {
  mayHaveHardwareGpu(): boolean;
  /** A regular file's size in bytes; undefined for anything else. */
  fileSize(path: string): number | undefined;
  /** VMAF_STREAM_GPU_THREAD (prestart.ts gpuThreadForced). */
  threadForced: boolean | undefined;
  /** prestart.ts THREAD_FRAMES. */
  threadFrames: number;
  /**
   * VMAF_STREAM_VERBOSE=1 in the environment: Dawn's own lines shown, as --verbose does. The
   * thread opens its device before the run's options reach it, so it must know from the start.
   */
  verboseByEnvironment?: boolean;
}

function fileSize(path: string): number | undefined {
  try {
    const info = statSync(path);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The options of a scoring command that may run on the GPU (not --backend cpu), where the
 * option table takes them; undefined for anything else (help, a queue command, what the full
 * parse will reject).
 */
function gpuRunValues(argv: readonly string[]): CliValues | undefined {
  if (argv[0] !== undefined && QUEUE_COMMANDS.includes(argv[0])) return undefined; // they score nothing here
  let values: CliValues;
  try {
    values = parseValues([...argv]);
  } catch {
    return undefined; // the full parse says what is wrong
  }
  if (values.help || values.version || values.list || values.queue !== undefined || values.reference === undefined) return undefined;
  return values.backend === 'cpu' ? undefined : values;
}

/**
 * Whether `auto`'s run is short by its arguments alone: --frame_cnt under the thread's
 * threshold (prestart.ts THREAD_FRAMES), or a y4m or raw reference file smaller than that
 * many 8-bit 4:2:0 1080p frames. Such a run may be scored on the cpu backend (short-run.ts
 * autoRunsOnCpu, once the formats are read).
 */
export function shortByArguments(values: CliValues, probe: EarlyProbe): boolean {
  const frames = probe.threadFrames;
  if (values.frame_cnt !== undefined && /^\d+$/.test(values.frame_cnt) && Number(values.frame_cnt) < frames) return true;
  const reference = values.reference;
  if (reference === undefined || !/\.(y4m|yuv)$/i.test(reference)) return false;
  const size = probe.fileSize(reference);
  return size !== undefined && size < frames * 1920 * 1080 * 1.5;
}

const NONE: EarlyStart = Object.freeze({ prewarm: false, thread: undefined });

/** What these arguments start early. */
export function earlyStartFor(argv: readonly string[], probe: EarlyProbe): EarlyStart {
  const values = gpuRunValues(argv);
  return values ? startFor(values, probe) : NONE;
}

/** What a scoring command's options (gpuRunValues: already parsed) start early. */
function startFor(values: CliValues, probe: EarlyProbe): EarlyStart {
  const backend = values.backend ?? 'auto';
  if (backend !== 'gpu' && !(backend === 'auto' && probe.mayHaveHardwareGpu())) return NONE;
  // A short `auto` run starts nothing: it may well end on the cpu backend, and a driver it
  // loaded for nothing costs it more than the GPU's start it would save (its exit among it).
  if (backend === 'auto' && shortByArguments(values, probe)) return NONE;
  let gpuTimeoutMs: number | undefined;
  try {
    gpuTimeoutMs = values['gpu-timeout'] !== undefined ? parseSeconds(values['gpu-timeout'], '--gpu-timeout') * 1000 : undefined;
  } catch {
    return NONE;
  }
  const thread = probe.threadForced ?? true;
  return { prewarm: true, thread: thread ? { kind: backend, gpuAdapter: values['gpu-adapter'], gpuTimeoutMs, dawnDiagnostics: values.verbose === true || probe.verboseByEnvironment === true } : undefined };
}

let prewarming = false;
/** prestart.ts, once a command line may have started a thread. */
let prestarted: typeof import('../kernels/gpu-thread/prestart.js') | undefined;

/**
 * Starts what earlyStartFor says: the driver's loading once per process, a thread where none
 * waits. The GPU's modules are loaded only for a command line that may use them (--version,
 * --help and usage errors load none).
 */
export async function startGpuEarly(argv: readonly string[]): Promise<void> {
  const values = gpuRunValues(argv);
  if (!values) return;
  const [presence, prestart, { loadNative }] = await Promise.all([
    import('../kernels/gpu-presence.js'),
    import('../kernels/gpu-thread/prestart.js'),
    import('../kernels/native.js'),
  ]);
  const start = startFor(values, {
    mayHaveHardwareGpu: presence.mayHaveHardwareGpu,
    fileSize,
    threadForced: prestart.gpuThreadForced(),
    threadFrames: prestart.THREAD_FRAMES,
    // As kernels/gpu/device.ts reads it (not imported here: it loads the GPU's modules).
    verboseByEnvironment: /^(1|true|yes)$/i.test(process.env.VMAF_STREAM_VERBOSE ?? ''),
  });
  if (start.prewarm && !prewarming) {
    prewarming = true;
    try {
      const native = loadNative();
      if (native.prewarmVulkan && native.awaitVulkanPrewarm) {
        native.prewarmVulkan();
        const wait = native.awaitVulkanPrewarm.bind(native);
        process.once('exit', () => wait());
      }
    } catch {
      // No addon: the run reports it where it needs it.
    }
  }
  if (start.thread) {
    prestarted = prestart;
    prestart.prestartGpuThread(start.thread);
  }
}

/** Ends a thread started early that no run took (a usage error, a failure before the backend opened). */
export function discardUnusedGpuThread(): void {
  prestarted?.discardGpuThread();
}
