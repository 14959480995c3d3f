/**
 * Opens a WebGPU device through Dawn (npm `webgpu`): picks an adapter (hardware first,
 * software such as lavapipe or SwiftShader as a fallback, or one named by a substring as
 * --gpu-adapter does), asks for the limits and features the kernels want, and turns
 * device loss and uncaptured errors into BackendError('E_GPU') so a failure surfaces
 * instead of hanging a stream. Dawn's own diagnostics, which it prints to stderr from
 * native code while adapters are enumerated, are kept out of stderr unless asked for
 * (showDawnDiagnostics, VMAF_STREAM_VERBOSE=1).
 */
import { mkdirSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendError } from '../../errors.js';
import { testDeviceHangStage } from '../../pipeline/backend-fault.js';
import { loadNative } from '../native.js';
import { cachedPruneWgsl } from './startup-cache.js';
import { mark, tracing } from '../../trace.js';

/** One adapter Dawn can see. */
export interface GpuAdapterEntry {
  /** Dawn's backend: 'vulkan', 'metal', 'd3d12', ... */
  backend: string;
  /** The adapter's device name, e.g. 'NVIDIA H100 80GB HBM3' or 'llvmpipe (LLVM 15.0.6, 256 bits)'. */
  name: string;
  /** A CPU implementation (lavapipe/llvmpipe, SwiftShader, WARP, ...), by its name. */
  isSoftware: boolean;
  /** The name as WebGPU's adapter info gives it (GPUAdapterInfo.device): adapterId(name). */
  id: string;
}

/**
 * The identifier WebGPU's adapter info carries for an adapter name (Dawn lower-cases it and
 * turns every run of other characters into '-': 'llvmpipe (LLVM 15.0.6, 256 bits)' is
 * 'llvmpipe-llvm-15-0-6-256-bits-'). A device opened without a listing knows only this.
 */
export function adapterId(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/** Whether an adapter matches a --gpu-adapter substring, by its name or by its id. */
export function adapterMatches(entry: GpuAdapterEntry, wanted: string): boolean {
  const want = wanted.toLowerCase();
  return entry.name.toLowerCase().includes(want) || entry.id.includes(adapterId(want));
}

export interface OpenGpuOptions {
  /**
   * Pick the first adapter whose name contains this (case-insensitive), as --gpu-adapter;
   * software adapters included. Without it, the first hardware adapter, else the first
   * software one.
   */
  adapter?: string;
  /** Refuse software adapters (unless named by `adapter`): for benchmarks. Default false. */
  requireHardware?: boolean;
  /** Limits the kernels cannot do without; an adapter below them is refused with E_GPU. */
  minimumLimits?: Partial<Record<GpuLimitName, number>>;
  /** Extra options for Dawn's create(), e.g. 'backend=vulkan', 'enable-dawn-features=...'. */
  dawnFlags?: readonly string[];
  /** Device label for Dawn's messages. */
  label?: string;
  /**
   * How long any wait on the GPU (a fence, an error scope, a compilation) may take before it
   * is E_GPU "no answer from the GPU": a hung device or driver ends the run instead of
   * hanging it. Default DEFAULT_GPU_TIMEOUT_MS; 0 waits for ever.
   */
  timeoutMs?: number;
}

/**
 * The default bound on one wait for the GPU: far above any frame's work on any adapter
 * (a 4K frame on lavapipe takes seconds), so only a device that stopped answering meets it.
 */
export const DEFAULT_GPU_TIMEOUT_MS = 300_000;

/** Limits requested at the adapter's maximum (each only where the adapter reports it). */
export const REQUESTED_LIMITS = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
  'maxUniformBufferBindingSize',
  'maxUniformBuffersPerShaderStage',
  'maxBindGroups',
  'maxBindingsPerBindGroup',
  'maxStorageTexturesPerShaderStage',
] as const;
export type GpuLimitName = (typeof REQUESTED_LIMITS)[number];

/** Optional features asked for where the adapter has them. */
export const OPTIONAL_FEATURES = ['timestamp-query', 'subgroups'] as const;

interface WebGpuModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

let modulePromise: Promise<WebGpuModule> | undefined;

/** Where Dawn's constants (GPUBufferUsage, ...) come from; also installs them as globals. */
async function loadWebGpu(): Promise<WebGpuModule> {
  modulePromise ??= (async () => {
    ensureRuntimeDir();
    let mod: WebGpuModule;
    try {
      mod = (await import('webgpu')) as unknown as WebGpuModule;
    } catch (cause) {
      throw new BackendError('E_GPU', `cannot load WebGPU (the 'webgpu' package's Dawn binary for ${process.platform}-${process.arch}): ${message(cause)}`, { cause });
    }
    const g = globalThis as Record<string, unknown>;
    for (const [k, v] of Object.entries(mod.globals)) if (!(k in g)) g[k] = v;
    mark('webgpu loaded');
    return mod;
  })();
  try {
    return await modulePromise;
  } catch (e) {
    modulePromise = undefined;
    throw e;
  }
}

// Dawn prints notices such as "Warning: maxDynamicUniformBuffersPerPipelineLayout
// artificially reduced from 1000000 to 16 ..." with fprintf(stderr) while it enumerates
// adapters (inside create(), requestAdapter() and requestDevice() calls), with no switch to
// turn them off. They say nothing a user of vmaf-stream can act on, so those calls run with
// fd 2 captured; --verbose lets them through as they come.
let dawnDiagnosticsShown = /^(1|true|yes)$/i.test(process.env.VMAF_STREAM_VERBOSE ?? '');

/** Lets Dawn's own stderr lines through (true: --verbose), or captures them (the default). */
export function showDawnDiagnostics(show: boolean): void {
  dawnDiagnosticsShown = show;
}

/** Whether Dawn's stderr lines are shown (the gpu thread is told the main thread's choice). */
export function dawnDiagnosticsShownNow(): boolean {
  return dawnDiagnosticsShown;
}

// Dawn's notices, as it prints them; any other line written to fd 2 while it was captured is
// another thread's (the main thread runs on while the gpu thread opens Dawn) and is written again.
const DAWN_LINE_PREFIX = 'Warning: ';

/** Runs a synchronous Dawn call with its stderr lines captured, unless they are to be shown. */
function quietDawn<T>(call: () => T): T {
  if (dawnDiagnosticsShown) return call();
  let capture: ReturnType<typeof loadNative>['captureStderr'];
  try {
    capture = loadNative().captureStderr;
  } catch {
    capture = undefined; // no addon: Dawn's lines show, nothing worse
  }
  if (!capture) return call();
  // Off the main thread, the main thread's own lines written meanwhile go back out (the addon
  // writes every line not of Dawn's before the capture ends: before exitNow can end the process).
  return (isMainThread ? capture(call) : capture(call, DAWN_LINE_PREFIX)).value;
}

/** Mesa's Vulkan drivers complain without XDG_RUNTIME_DIR; give them a private one. */
function ensureRuntimeDir(): void {
  if (process.platform !== 'linux' || process.env.XDG_RUNTIME_DIR) return;
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const dir = join(tmpdir(), `xdg-runtime-${uid}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = dir;
  } catch {
    // Only a warning from Mesa follows; not worth failing for.
  }
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// dawn.node's devices do not keep their Dawn instance (the GPU object create() returns)
// alive: once that object is garbage collected, the instance is destroyed under the live
// device and the process dies at random (mutex assertions, SIGSEGV, "futex facility
// returned an unexpected error code"). Every instance in use is therefore held here: the
// one per flag set that lists adapters, and each opened device's own, for good (a
// process opens a handful at most).
const listingInstances = new Map<string, GPU>();
const deviceInstances = new Set<GPU>();

const SOFTWARE_NAME = /llvmpipe|lavapipe|swiftshader|softpipe|software|microsoft basic render|\bwarp\b/i;

/** Whether an adapter name or description names a CPU implementation. */
export function isSoftwareName(name: string): boolean {
  return SOFTWARE_NAME.test(name);
}

// Dawn's requestAdapter, given an adapter name that matches nothing, rejects with the list
// of every adapter it enumerated ("\n * backend: 'vulkan', name: '...'"): that is the only
// enumeration dawn.node offers, so it is the one used here.
const NO_SUCH_ADAPTER = '\u0001vmaf-stream: list adapters\u0001';
const ADAPTER_LINE = /^ \* backend: '([^']*)', name: '(.*)'$/;

/** Every adapter Dawn can see (for --gpu-adapter messages and `--backend auto`). */
export async function listGpuAdapters(dawnFlags: readonly string[] = []): Promise<GpuAdapterEntry[]> {
  const { create } = await loadWebGpu();
  const flags = [...dawnFlags.filter((f) => !f.startsWith('adapter=')), `adapter=${NO_SUCH_ADAPTER}`];
  const key = flags.join('\n');
  let gpu = listingInstances.get(key);
  if (!gpu) listingInstances.set(key, (gpu = quietDawn(() => create(flags))));
  const instance = gpu;
  let text: string;
  try {
    const adapter = await quietDawn(() => instance.requestAdapter({ powerPreference: 'high-performance' }));
    if (adapter === null) return []; // Dawn found no adapter at all
    // A newer dawn.node that matches differently: at least report that one.
    return [entryFromInfo(adapter.info)];
  } catch (e) {
    text = message(e);
  }
  const entries: GpuAdapterEntry[] = [];
  for (const line of text.split('\n')) {
    const m = ADAPTER_LINE.exec(line);
    if (m) entries.push({ backend: m[1]!, name: m[2]!, isSoftware: isSoftwareName(m[2]!), id: adapterId(m[2]!) });
  }
  if (entries.length === 0 && !/Available adapters/.test(text)) {
    throw new BackendError('E_GPU', `cannot list WebGPU adapters: ${text}`);
  }
  return entries;
}

function entryFromInfo(info: GPUAdapterInfo): GpuAdapterEntry {
  const name = info.description || info.device || info.vendor || 'unknown adapter';
  return { backend: 'unknown', name, isSoftware: infoIsSoftware(info, name), id: adapterId(name) };
}

function infoIsSoftware(info: GPUAdapterInfo, name: string): boolean {
  const fallback = (info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true;
  return fallback || info.architecture === 'software' ||
    isSoftwareName(`${name} ${info.description} ${info.device} ${info.vendor}`);
}

/** hasHardwareAdapter's answers, per flag set: asked again (the gpu thread's preopen, then its run), it answers at once. */
const hardwareAnswers = new Map<string, Promise<boolean>>();

/** Whether a hardware (non-software) WebGPU adapter exists: `--backend auto` picks gpu then. */
export function hasHardwareAdapter(dawnFlags: readonly string[] = []): Promise<boolean> {
  const key = dawnFlags.join('\n');
  let answer = hardwareAnswers.get(key);
  if (!answer) hardwareAnswers.set(key, (answer = findHardwareAdapter(dawnFlags)));
  return answer;
}

async function findHardwareAdapter(dawnFlags: readonly string[]): Promise<boolean> {
  try {
    // Dawn's own pick prefers hardware: a software pick means there is none (no listing needed).
    const preferred = await preferredAdapter(dawnFlags, true);
    if (preferred) return !preferred.isSoftware;
  } catch {
    // fall back to the listing
  }
  try {
    return (await listGpuAdapters(dawnFlags)).some((a) => !a.isSoftware);
  } catch {
    return false;
  }
}

// One instance per flag set without the adapter= flag: Dawn picks the adapter itself
// (requestAdapter, high-performance first), so opening a device needs no listing (each
// instance enumerates every Vulkan driver again: the most of start-up). Held for good, as
// listingInstances.
const defaultInstances = new Map<string, GPU>();

interface PreferredAdapter {
  gpu: GPU;
  adapter: GPUAdapter;
  /** GPUAdapterInfo.device: adapterId() of the name a listing shows. */
  name: string;
  isSoftware: boolean;
}

/**
 * The adapter hasHardwareAdapter found, per flag set, kept for the device `auto` then opens
 * (requestAdapter takes 70-90 ms on the H100 machine: once is enough). An adapter opens one device.
 */
const keptAdapters = new Map<string, PreferredAdapter>();

/**
 * The adapter Dawn picks by itself on the default instance for these flags; null when none.
 * `keep`: kept for the next call (keptAdapters), which takes it instead of asking again.
 */
async function preferredAdapter(dawnFlags: readonly string[], keep = false): Promise<PreferredAdapter | null> {
  const { create } = await loadWebGpu();
  const flags = dawnFlags.filter((f) => !f.startsWith('adapter='));
  const key = flags.join('\n');
  const kept = keptAdapters.get(key);
  if (kept) {
    keptAdapters.delete(key);
    if (!keep) return kept;
  }
  let gpu = defaultInstances.get(key);
  if (!gpu) defaultInstances.set(key, (gpu = quietDawn(() => create(flags))));
  mark('dawn instance');
  const instance = gpu;
  const adapter = await quietDawn(() => instance.requestAdapter({ powerPreference: 'high-performance' }));
  mark('adapter');
  if (!adapter) return null;
  const info = adapter.info;
  const name = info.device || adapterId(info.description || info.vendor || 'unknown adapter');
  const preferred = { gpu: instance, adapter, name, isSoftware: infoIsSoftware(info, name) };
  if (keep) keptAdapters.set(key, preferred);
  return preferred;
}

function describe(list: readonly GpuAdapterEntry[]): string {
  return list.length === 0
    ? 'no WebGPU adapter found (for a CPU-only machine, install lavapipe: scripts/install-lavapipe.sh)'
    : `available adapters: ${list.map((a) => `'${a.name}' (${a.backend}${a.isSoftware ? ', software' : ''})`).join(', ')}`;
}

/** An open device and what is known about it. Close it with destroy(). */
export class GpuDevice {
  readonly device: GPUDevice;
  /**
   * The adapter's name as Dawn lists it where the device was opened from a listing (a named
   * adapter); opened by Dawn's own pick, the name its info gives (its adapterId).
   */
  readonly adapterName: string;
  /** adapterId(adapterName): the same for either way of opening the same adapter. */
  readonly adapterId: string;
  readonly adapterInfo: Readonly<{ vendor: string; architecture: string; device: string; description: string; isFallbackAdapter: boolean }>;
  /** Software rasterizer (lavapipe, SwiftShader): correct, but slow. */
  readonly isSoftware: boolean;
  /** Features enabled on the device (of OPTIONAL_FEATURES, the ones granted). */
  readonly features: ReadonlySet<string>;
  readonly limits: GPUSupportedLimits;
  /** The bound on a wait for the GPU where guard() is given none (OpenGpuOptions.timeoutMs). */
  readonly timeoutMs: number;
  /** Rejects (never resolves) with the first failure: device lost or an uncaptured error. */
  readonly failed: Promise<never>;
  readonly #instance: GPU;
  #error: BackendError | undefined;
  #destroyed = false;
  /** The test hook's hang (hangForTest): answers from the GPU are no longer seen. */
  #hung = false;
  #hangHold: NodeJS.Timeout | undefined;
  #reject!: (e: BackendError) => void;
  #listeners = new Set<(e: BackendError) => void>();
  /** Ends the spacing of dawn.node's polls a software device keeps for its life (paceDawnPolling). */
  #unpace: (() => void) | undefined;

  /** Use openGpuDevice(). `instance` is the Dawn instance the device came from. */
  constructor(instance: GPU, device: GPUDevice, adapterName: string, info: GPUAdapterInfo, isSoftware: boolean, timeoutMs = DEFAULT_GPU_TIMEOUT_MS) {
    this.#instance = instance;
    deviceInstances.add(instance);
    this.device = device;
    this.adapterName = adapterName;
    this.adapterId = adapterId(adapterName);
    this.adapterInfo = Object.freeze({
      vendor: info.vendor,
      architecture: info.architecture,
      device: info.device,
      description: info.description,
      isFallbackAdapter: (info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true,
    });
    this.isSoftware = isSoftware;
    // On a software adapter the GPU's work is the CPU's: dawn.node's busy poll would take a
    // core from it for the whole run, and a frame takes far longer than the 1 ms spacing.
    if (isSoftware) this.#unpace = paceDawnPolling();
    this.features = new Set([...device.features].map(String));
    this.limits = device.limits;
    this.timeoutMs = timeoutMs;
    this.failed = new Promise<never>((_, reject) => { this.#reject = reject; });
    this.failed.catch(() => {}); // only callers that look at it see the rejection
    device.addEventListener('uncapturederror', (ev) => {
      const err = (ev as GPUUncapturedErrorEvent).error;
      const kind = err?.constructor?.name ?? 'GPUError';
      this.#fail(new BackendError('E_GPU', `${adapterName}: ${kind}: ${err?.message ?? 'unknown error'}`));
    });
    void device.lost.then((info) => {
      if (this.#destroyed && info.reason === 'destroyed') return;
      this.#fail(new BackendError('E_GPU', `${adapterName}: device lost (${info.reason}): ${info.message}`));
    });
  }

  /** The first failure, if any. */
  get error(): BackendError | undefined {
    return this.#error;
  }

  #fail(e: BackendError): void {
    if (this.#error) return;
    this.#error = e;
    this.#reject(e);
    for (const cb of this.#listeners) {
      try { cb(e); } catch { /* a listener's own failure is not the device's */ }
    }
  }

  /** Throws the first failure, if there was one. */
  throwIfFailed(): void {
    if (this.#error) throw this.#error;
  }

  /** Calls back once on the first failure (at once if it already failed); returns an unsubscribe. */
  onFailure(cb: (e: BackendError) => void): () => void {
    if (this.#error) {
      cb(this.#error);
      return () => {};
    }
    this.#listeners.add(cb);
    return () => this.#listeners.delete(cb);
  }

  /**
   * Resolves as p does, unless the device fails first, p rejects (a lost device rejects
   * mapAsync with an AbortError) or, with timeoutMs > 0 (default this.timeoutMs), the GPU
   * does not answer in time: each becomes BackendError('E_GPU'). It subscribes to the
   * device's failure only while it waits, so a stream that guards every frame holds a
   * constant amount of memory.
   */
  guard<T>(p: Promise<T>, what = 'GPU operation', timeoutMs = this.timeoutMs): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      let off: () => void = () => {};
      const settle = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        off();
        if (timer) clearTimeout(timer);
        fn();
      };
      // Once hung (the test hook), the GPU's answers are dropped, as if they never came.
      p.then(
        (v) => this.#hung || settle(() => resolve(v)),
        (e: unknown) => this.#hung || settle(() => reject(this.#asError(what, e))),
      );
      off = this.onFailure((e) => settle(() => reject(e)));
      if (timeoutMs > 0 && !settled) {
        timer = setTimeout(() => {
          settle(() => reject(new BackendError('E_GPU', `${this.adapterName}: ${what}: no answer from the GPU in ${timeoutMs / 1000} s (the GPU timeout)`)));
        }, timeoutMs);
        // A pending guard must not keep the process alive on its own.
        timer.unref?.();
      }
    });
  }

  #asError(what: string, e: unknown): BackendError {
    if (e instanceof BackendError) return e;
    if (this.#error) return this.#error;
    return new BackendError('E_GPU', `${this.adapterName}: ${what}: ${message(e)}`, { cause: e });
  }

  /**
   * Runs fn inside validation / out-of-memory / internal error scopes; rejects with
   * BackendError if any GPU error was raised by what fn recorded or submitted.
   */
  async withErrorScopes<T>(what: string, fn: () => T | Promise<T>): Promise<T> {
    this.throwIfFailed();
    const d = this.device;
    d.pushErrorScope('internal');
    d.pushErrorScope('out-of-memory');
    d.pushErrorScope('validation');
    let result: T;
    try {
      result = await fn();
    } finally {
      const errors = await this.guard(Promise.all([d.popErrorScope(), d.popErrorScope(), d.popErrorScope()]));
      const first = errors.find((e) => e !== null);
      if (first) throw new BackendError('E_GPU', `${this.adapterName}: ${what}: ${first.constructor?.name ?? 'GPUError'}: ${first.message}`);
    }
    return result;
  }

  /**
   * Compiles a compute shader's entry point (only what it reaches: wgsl-prune.ts, kept between
   * runs by startup-cache.ts); WGSL errors come back as BackendError with line numbers of the
   * compiled text.
   */
  async createComputePipeline(source: string, options: { label: string; entryPoint?: string; constants?: Record<string, number> }): Promise<GPUComputePipeline> {
    const paced = paceDawnPolling();
    try {
      return await this.#createComputePipeline(source, options);
    } finally {
      paced();
    }
  }

  async #createComputePipeline(source: string, options: { label: string; entryPoint?: string; constants?: Record<string, number> }): Promise<GPUComputePipeline> {
    this.throwIfFailed();
    const d = this.device;
    // The scope is popped before any await: kernels compile their pipelines concurrently, and
    // scopes are one stack per device. The pipeline's compilation starts at once, beside the
    // module's compilation info (a module with errors makes it reject, and the errors below
    // are what is reported).
    const entryPoint = options.entryPoint ?? 'main';
    const t0 = tracing() ? performance.now() : 0;
    const code = cachedPruneWgsl(source, entryPoint, Object.keys(options.constants ?? {}));
    const t1 = tracing() ? performance.now() : 0;
    d.pushErrorScope('validation');
    const module = d.createShaderModule({ code, label: options.label });
    const scope = d.popErrorScope();
    const t2 = tracing() ? performance.now() : 0;
    const pipeline = d.createComputePipelineAsync({
      label: options.label,
      layout: 'auto',
      compute: { module, entryPoint, ...(options.constants ? { constants: options.constants } : {}) },
    });
    // What the calling thread spends on each (Dawn parses and validates the module there).
    if (tracing()) mark(`pipeline call: ${options.label}: prune ${(t1 - t0).toFixed(1)} ms, module ${(t2 - t1).toFixed(1)} ms, pipeline ${(performance.now() - t2).toFixed(1)} ms`);
    pipeline.catch(() => undefined);
    if (tracing()) void pipeline.then(() => mark(`pipeline ready: ${options.label} (${code.length} characters)`), () => undefined);
    const [info, scopeError] = await this.guard(Promise.all([module.getCompilationInfo(), scope]), `compiling the ${options.label} kernel`);
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length > 0 || scopeError) {
      const lines = code.split('\n');
      const text = errors.length > 0
        ? errors.map((m) => `${options.label}:${m.lineNum}:${m.linePos}: ${m.message}\n    ${lines[m.lineNum - 1] ?? ''}`).join('\n')
        : scopeError!.message;
      throw new BackendError('E_GPU', `WGSL compilation failed:\n${text}`);
    }
    try {
      return await this.guard(pipeline, `creating the ${options.label} pipeline`);
    } catch (e) {
      if (e instanceof BackendError) throw e;
      throw new BackendError('E_GPU', `${options.label}: cannot create compute pipeline: ${message(e)}`, { cause: e });
    }
  }

  /** Copies `size` bytes of a buffer (COPY_SRC usage) back to the host. */
  async read(buffer: GPUBuffer, size = buffer.size, offset = 0): Promise<ArrayBuffer> {
    this.throwIfFailed();
    const d = this.device;
    const staging = d.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'readback' });
    try {
      const enc = d.createCommandEncoder();
      enc.copyBufferToBuffer(buffer, offset, staging, 0, size);
      d.queue.submit([enc.finish()]);
      await this.guard(staging.mapAsync(GPUMapMode.READ));
      const copy = staging.getMappedRange().slice(0);
      staging.unmap();
      this.throwIfFailed();
      return copy;
    } finally {
      staging.destroy();
    }
  }

  /**
   * Test hook (VMAF_STREAM_TEST_HANG_GPU_AT, pipeline/backend-fault.ts): from now on no
   * wait on the GPU sees its answer, those already waiting included, as with a device or
   * driver that hung with fences pending; each wait ends only at its timeout (or on a
   * device failure). The device itself keeps working, so it is freed as usual.
   */
  hangForTest(): void {
    this.#hung = true;
    // A real hung driver's pending work holds the event loop (the guards' timers do not): so
    // does the hook, until destroy(), or a run with nothing else pending would just exit.
    this.#hangHold ??= setInterval(() => {}, 60_000);
  }

  /** Frees the device; a loss caused by this is not a failure. */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    clearInterval(this.#hangHold);
    this.#unpace?.();
    this.#listeners.clear();
    this.device.destroy();
    // The instance stays held: Dawn objects of this device may still be collected later.
  }
}

// dawn.node learns that its work is done (a pipeline compiled, a buffer mapped) by polling
// its instance: while any of its promises is pending, it schedules the poll again with
// globalThis.setImmediate, every turn of the event loop, which keeps a core busy and fills
// the young generation with the callbacks it makes. Pipelines compile on Dawn's own threads
// (tens of ms on a GPU, seconds on lavapipe, the first frame waiting for them), so while
// any compiles, dawn.node's polls (its callbacks are native functions) are spaced 1 ms
// apart instead: the core goes to the compilers. On the 2-core box with lavapipe a 1-frame
// run took about 0.5 s less CPU and less wall time. Frames are not affected: the spacing
// ends with the last compile (its success, its error or its timeout); only a software
// device keeps it for its life (GpuDevice).
let pacing = 0;
let pacedSetImmediate: typeof setImmediate | undefined;
let plainSetImmediate: typeof setImmediate | undefined;

/** Spaces dawn.node's polls 1 ms apart until the returned function is called (once or more). */
function paceDawnPolling(): () => void {
  if (pacing++ === 0) {
    const plain = (plainSetImmediate = globalThis.setImmediate);
    const toText = Function.prototype.toString;
    pacedSetImmediate = ((callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      typeof callback === 'function' && toText.call(callback).endsWith('{ [native code] }')
        ? setTimeout(callback, 1, ...args)
        : plain(callback, ...args)) as unknown as typeof setImmediate;
    globalThis.setImmediate = pacedSetImmediate;
  }
  let done = false;
  return () => {
    if (done) return;
    done = true;
    // Put back only what was put there (a test's fake timers installed since stay theirs).
    if (--pacing === 0 && globalThis.setImmediate === pacedSetImmediate) globalThis.setImmediate = plainSetImmediate!;
  };
}

/** The timeouts bounded() raised: opening gives up on them rather than trying another way. */
const gpuTimeouts = new WeakSet<Error>();

/**
 * p, or E_GPU "STAGE: no answer from the GPU in S s (the GPU timeout)" when it takes longer
 * than timeoutMs (0: no bound): a driver that hangs while an adapter or device is opened
 * ends the run as a hung fence does. The timer is not unref'd: until p settles or the bound
 * passes, the caller is waiting for it.
 */
function bounded<T>(p: Promise<T>, stage: string, timeoutMs: number): Promise<T> {
  if (!(timeoutMs > 0) || !Number.isFinite(timeoutMs)) return p;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new BackendError('E_GPU', `${stage}: no answer from the GPU in ${timeoutMs / 1000} s (the GPU timeout)`);
      gpuTimeouts.add(error);
      p.catch(() => {}); // whatever it ends with, the timeout was the error
      reject(error);
    }, timeoutMs);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A promise that never settles: the test hook's hung driver (VMAF_STREAM_TEST_HANG_GPU_AT=device). */
function hungForTest<T>(): Promise<T> {
  return new Promise<T>(() => {});
}

/** A device opened ahead of its run (preopenGpuDevice), by its options, until openGpuDevice takes it. */
let preopened: { key: string; device: Promise<GpuDevice> } | undefined;

function optionsKey(options: OpenGpuOptions): string {
  const { adapter, requireHardware, minimumLimits, dawnFlags, label, timeoutMs } = options;
  return JSON.stringify([adapter ?? '', requireHardware === true, minimumLimits ?? {}, dawnFlags ?? [], label ?? '', timeoutMs ?? DEFAULT_GPU_TIMEOUT_MS]);
}

/**
 * Starts opening the device that openGpuDevice(options) will be asked for (the gpu thread,
 * started before its run: kernels/gpu-thread), so that Dawn's adapter and device (0.15-0.2 s,
 * synchronous in Dawn) are done while the run reads its inputs' headers. The first
 * openGpuDevice call with equal options takes it (or its error); discardPreopenedDevice
 * closes one never taken.
 */
export function preopenGpuDevice(options: OpenGpuOptions): void {
  if (preopened) return;
  const device = openDevice(options);
  device.catch(() => undefined);
  preopened = { key: optionsKey(options), device };
}

/** Closes a device preopenGpuDevice opened and no run took; resolves once it is closed (or failed to open). */
export async function discardPreopenedDevice(): Promise<void> {
  const held = preopened;
  preopened = undefined;
  if (!held) return;
  const device = await held.device.catch(() => undefined);
  device?.destroy();
}

/**
 * Opens a device: hardware adapters first, software as the fallback (isSoftware says
 * which), or the one `adapter` names. Throws BackendError('E_GPU') with the adapters
 * seen when none fits.
 */
export async function openGpuDevice(options: OpenGpuOptions = {}): Promise<GpuDevice> {
  if (preopened && preopened.key === optionsKey(options)) {
    const { device } = preopened;
    preopened = undefined;
    return device;
  }
  return openDevice(options);
}

async function openDevice(options: OpenGpuOptions): Promise<GpuDevice> {
  const { create } = await loadWebGpu();
  const flags = (options.dawnFlags ?? []).filter((f) => !f.startsWith('adapter='));
  const named = options.adapter !== undefined && options.adapter !== '';
  const timeoutMs = options.timeoutMs ?? DEFAULT_GPU_TIMEOUT_MS;
  const hangAt = testDeviceHangStage();

  let gpu: GPU | undefined;
  let adapter: GPUAdapter | null = null;
  let chosen: Pick<GpuAdapterEntry, 'name' | 'isSoftware'> | undefined;
  if (!named) {
    // Dawn's own pick on one instance; the listing only where it will not do (or fails).
    try {
      const preferred = await bounded(preferredAdapter(flags), 'finding a WebGPU adapter', timeoutMs);
      if (preferred && !(preferred.isSoftware && options.requireHardware)) {
        ({ gpu, adapter } = preferred);
        chosen = preferred;
      }
    } catch (e) {
      if (gpuTimeouts.has(e as Error)) throw e;
      // else the listing below says why
    }
  }
  if (!adapter || !gpu || !chosen) {
    const list = await bounded(listGpuAdapters(flags), 'listing the WebGPU adapters', timeoutMs);
    let entry: GpuAdapterEntry | undefined;
    if (named) {
      entry = list.find((a) => adapterMatches(a, options.adapter!));
      if (!entry) throw new BackendError('E_GPU', `no WebGPU adapter matches '${options.adapter}'; ${describe(list)}`);
    } else {
      entry = list.find((a) => !a.isSoftware) ?? (options.requireHardware ? undefined : list.find((a) => a.isSoftware));
      if (!entry) {
        throw new BackendError('E_GPU', options.requireHardware && list.length > 0
          ? `no hardware WebGPU adapter; ${describe(list)}`
          : describe(list));
      }
    }
    const name = entry.name;
    const instance = quietDawn(() => create([...flags, `adapter=${name}`]));
    gpu = instance;
    deviceInstances.add(instance); // held from here on (see deviceInstances)
    try {
      adapter = await bounded(quietDawn(() => instance.requestAdapter({ powerPreference: 'high-performance' })), `opening WebGPU adapter '${name}'`, timeoutMs);
    } catch (cause) {
      if (gpuTimeouts.has(cause as Error)) throw cause;
      throw new BackendError('E_GPU', `cannot open WebGPU adapter '${name}': ${message(cause)}`, { cause });
    }
    if (!adapter) throw new BackendError('E_GPU', `cannot open WebGPU adapter '${name}'; ${describe(list)}`);
    chosen = entry;
  }

  const info = adapter.info;
  const isSoftware = chosen.isSoftware || infoIsSoftware(info, chosen.name);

  const requiredLimits: Record<string, number> = {};
  const adapterLimits = adapter.limits as unknown as Record<string, number | undefined>;
  for (const name of REQUESTED_LIMITS) {
    const max = adapterLimits[name];
    if (typeof max === 'number' && Number.isFinite(max)) requiredLimits[name] = max;
  }
  for (const [name, min] of Object.entries(options.minimumLimits ?? {})) {
    const max = adapterLimits[name];
    if (min !== undefined && (typeof max !== 'number' || max < min)) {
      throw new BackendError('E_GPU', `WebGPU adapter '${chosen.name}' has ${name} = ${max ?? 'none'}, below the ${min} needed`);
    }
  }
  const requiredFeatures = OPTIONAL_FEATURES.filter((f) => adapter.features.has(f)) as GPUFeatureName[];

  let device: GPUDevice;
  const opened = adapter;
  try {
    const request = hangAt === 'device'
      ? hungForTest<GPUDevice>()
      : quietDawn(() => opened.requestDevice({
        label: options.label ?? 'vmaf-stream',
        requiredFeatures,
        requiredLimits,
      }));
    device = await bounded(request, `opening a WebGPU device on '${chosen.name}'`, timeoutMs);
  } catch (cause) {
    if (gpuTimeouts.has(cause as Error)) throw cause;
    throw new BackendError('E_GPU', `cannot open a WebGPU device on '${chosen.name}': ${message(cause)}`, { cause });
  }
  mark('device');
  const result = new GpuDevice(gpu, device, chosen.name, info, isSoftware, timeoutMs);
  // The test hook's hang in compilation: the kernels' first waits (their compilation) see no answer.
  if (hangAt === 'compile') result.hangForTest();
  return result;
}
