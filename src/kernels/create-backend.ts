import { mayHaveHardwareGpu } from './gpu-presence.js';
import type { BackendKind, FeatureBackend } from './backend.js';
import { PlanBackend } from './plan-backend.js';
import { planHasGpuKernels, type RunPlan } from '../extractors/plan.js';
import { gpuThreadForced } from './gpu-thread/prestart.js';
import { integerMotion } from '../extractors/integer_motion/integer_motion.js';
import { motionInstance, type MotionInstance } from '../extractors/integer_motion/motion-options.js';
import { NO_CORE_PARTS, planAdmEgl1, planCoreParts, type CoreParts } from './core-parts.js';
import type { GpuParts } from './gpu/gpu-extractors.js';

export interface BackendOptions {
  threads: number;
  /** Rendition k's aggregate metrics at the end of the run (see PlanBackendOptions). */
  onAggregate?: (k: number, metrics: Record<string, number>) => void;
  gpuAdapter?: string;
  onWarning?: (message: string) => void;
  /** The motion instances the core computes (default: libvmaf's default instance). */
  motion?: readonly MotionInstance[];
  /** The core parts computed (default all): a plan's (planCoreParts). */
  parts?: CoreParts;
  /** The gpu backend's bound on one wait for the GPU, in ms (GpuBackendOptions.fenceTimeoutMs). */
  gpuTimeoutMs?: number;
  /**
   * createPlanBackend: whether a GPU run's backend runs on a thread of its own
   * (gpu-thread/gpu-thread-backend.ts; pipeline/short-run.ts says when it pays). Default no.
   * VMAF_STREAM_GPU_THREAD=1 or 0, where set, decides instead (for measurements).
   */
  gpuThread?: boolean;
}

/**
 * Opens the requested backend. `gpu` opens the gpu backend on the adapter `gpuAdapter`
 * names, else the first hardware adapter, else a software one (lavapipe, SwiftShader: exact
 * but slow, with a warning). `auto` takes the gpu backend only when a hardware adapter exists
 * (or the one `gpuAdapter` names is hardware), else the cpu backend; a hardware adapter that
 * fails to open falls back to the cpu backend with a warning.
 */
export async function createBackend(kind: BackendKind | 'auto', options: BackendOptions): Promise<FeatureBackend> {
  switch (kind) {
    case 'cpu':
      return openCpuBackend(options);
    case 'gpu': {
      const { GpuBackend } = await import('./gpu/gpu-backend.js');
      return GpuBackend.open({ adapter: options.gpuAdapter, onWarning: options.onWarning, ...coreOptionsOf(options), ...gpuTimeoutOf(options) });
    }
    case 'auto': {
      const gpu = await openHardwareGpu(options);
      return gpu ?? openCpuBackend(options);
    }
  }
}

/** The cpu backend, its module loaded only by runs that use it (a gpu run's start-up does not). */
async function openCpuBackend(options: BackendOptions): Promise<FeatureBackend> {
  const { CpuBackend } = await import('./cpu-backend.js');
  return new CpuBackend(cpuOptions(options));
}

function coreOptionsOf(options: BackendOptions): { motion?: readonly MotionInstance[]; parts?: CoreParts } {
  return { ...(options.motion ? { motion: options.motion } : {}), ...(options.parts ? { parts: options.parts } : {}) };
}

function gpuTimeoutOf(options: BackendOptions): { fenceTimeoutMs?: number } {
  return options.gpuTimeoutMs !== undefined ? { fenceTimeoutMs: options.gpuTimeoutMs } : {};
}

function cpuOptions(options: BackendOptions): { threads: number; motion?: readonly MotionInstance[]; parts?: CoreParts } {
  return { threads: options.threads, ...coreOptionsOf(options) };
}

/** The plan's motion instances, as the core computes them (in plan order). */
export function planMotionInstances(plan: RunPlan): MotionInstance[] {
  return plan.instances.filter((x) => x.definition === integerMotion).map((x) => motionInstance(x.options));
}

/**
 * The backend for a run plan: the requested backend computes the plan's core instances
 * (integer VIF, ADM, and each motion instance, whose SADs it computes once; only the core
 * parts the plan has instances of, planCoreParts), and is not
 * opened at all when the plan has none (unless it is the gpu backend and some extractor has
 * a gpu kernel); native instances run on the host's threads beside it, or, on the gpu
 * backend, in its command buffers where they have a gpu kernel for the input.
 */
export async function createPlanBackend(plan: RunPlan, kind: BackendKind | 'auto', options: BackendOptions): Promise<FeatureBackend> {
  const needsCore = plan.instances.some((x) => x.definition.implementation.kind === 'core');
  // On the gpu backend, extractors with gpu kernels run in its command buffers: it opens for
  // them even without core instances (and then runs no VIF, ADM or motion).
  const gpuKernels = kind === 'gpu' && planHasGpuKernels(plan);
  const mayOpenGpu = (needsCore && (kind === 'gpu' || (kind === 'auto' && mayHaveHardwareGpu()))) || gpuKernels;
  if (mayOpenGpu && gpuThreadWanted(options)) {
    const thread = await import('./gpu-thread/gpu-thread-backend.js');
    if (thread.planGoesToThread(plan)) {
      const opened = await thread.openGpuThread(plan, kind, options);
      if (opened) return opened;
      kind = 'cpu'; // 'auto', and the thread found no GPU to use: not worth a second look
    }
  }
  let core: FeatureBackend | undefined;
  if (needsCore) {
    // Without an egl_1 ADM instance the cpu backend computes ADM's default variant alone.
    const parts = planCoreParts(plan);
    core = await createBackend(kind, { ...options, motion: planMotionInstances(plan), parts: planAdmEgl1(plan) ? parts : { ...parts, admEgl1: false } });
  } else if (gpuKernels) {
    const { GpuBackend } = await import('./gpu/gpu-backend.js');
    core = await GpuBackend.open({ adapter: options.gpuAdapter, onWarning: options.onWarning, parts: NO_CORE_PARTS, ...gpuTimeoutOf(options) });
  }
  let gpuParts: GpuParts | undefined;
  if (core?.kind === 'gpu' && planHasGpuKernels(plan)) {
    try {
      gpuParts = await loadGpuParts(plan);
    } catch (error) {
      await core.close();
      throw error;
    }
  }
  return new PlanBackend(plan, core, core?.kind ?? (kind === 'gpu' ? 'gpu' : 'cpu'), { threads: options.threads, onWarning: options.onWarning, onAggregate: options.onAggregate, gpuParts });
}

/** Whether a GPU run's backend goes on a thread of its own (BackendOptions.gpuThread). */
function gpuThreadWanted(options: BackendOptions): boolean {
  return gpuThreadForced() ?? options.gpuThread === true;
}

/** The gpu parts of the plan's extractors, their modules (and gpu-extractors.ts) loaded only by gpu runs that have some. */
async function loadGpuParts(plan: RunPlan): Promise<GpuParts> {
  const { GpuParts } = await import('./gpu/gpu-extractors.js');
  return GpuParts.load(plan.instances);
}

async function openHardwareGpu(options: BackendOptions): Promise<FeatureBackend | undefined> {
  if (!mayHaveHardwareGpu()) return undefined;
  let device: typeof import('./gpu/device.js');
  try {
    device = await import('./gpu/device.js');
  } catch {
    return undefined;
  }
  const wanted = options.gpuAdapter;
  if (wanted === undefined || wanted === '') {
    // Dawn's own pick on the instance the device then opens on: no listing.
    if (!(await device.hasHardwareAdapter())) return undefined;
  } else {
    let adapters: Awaited<ReturnType<typeof device.listGpuAdapters>>;
    try {
      adapters = await device.listGpuAdapters();
    } catch {
      return undefined; // no WebGPU here at all: the cpu backend
    }
    if (!adapters.some((a) => !a.isSoftware && device.adapterMatches(a, wanted))) return undefined;
  }
  try {
    const { GpuBackend } = await import('./gpu/gpu-backend.js');
    return await GpuBackend.open({ adapter: options.gpuAdapter, requireHardware: true, onWarning: options.onWarning, ...coreOptionsOf(options), ...gpuTimeoutOf(options) });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    options.onWarning?.(`cannot use the GPU (${message}); using the cpu backend`);
    return undefined;
  }
}
