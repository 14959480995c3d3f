/**
 * `--backend auto` and short runs. Opening the gpu backend (Dawn's adapter and device, then
 * the kernels) takes 0.3-0.5 s on the H100 machine before the first frame; the cpu backend
 * starts at once. Measured there (16 threads, 1080p, whole runs, paired): v0 10 frames 0.37 s
 * on the cpu backend against 0.73 s on the gpu backend, 30 frames 0.50 against 0.80, 60
 * frames 0.83 against 0.90, 100 frames 0.92 against 0.95, 150 frames 1.06 against 0.90; v1
 * (no VIF: far less work on the cpu) 30 frames 0.46 against 1.00, 150 frames 0.58 against
 * 0.91, 250 frames 0.84 against 0.97, 400 frames 1.27 against 1.20. So `auto` scores a run
 * the cpu backend is expected to finish first on the cpu backend, and never opens the GPU:
 * about six 1080p frames per thread when the run computes VIF, sixteen when it does not.
 * Only where the run's length is known before any frame is read: --frame_cnt, or a
 * reference that is a y4m or raw file (its size gives its frame count). The values are the
 * same on either backend; only the time differs.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { FrameFormat } from '../types.js';
import type { FrameInput } from '../decode/open-source.js';
import { frameLayout } from '../decode/frame-layout.js';
import { planHasGpuKernels, type RunPlan } from '../extractors/plan.js';
import { integerVif } from '../extractors/integer_vif/integer_vif.js';
import { floatVif } from '../extractors/float_vif/float_vif.js';
import { THREAD_FRAMES, gpuThreadForced, hasPrestartedGpuThread } from '../kernels/gpu-thread/prestart.js';

/** 1080p frames (over every rendition) one cpu thread scores in about the time the GPU takes to open. */
export const CPU_FRAMES_PER_THREAD = { withVif: 6, withoutVif: 16 } as const;

export interface RunSize {
  frames: number;
  width: number;
  height: number;
  /** Distorted inputs scored against the reference. */
  renditions: number;
  /** The cpu backend's threads. */
  threads: number;
  /** Whether the run computes VIF (integer or float): the cpu backend's largest cost per frame. */
  vif: boolean;
}

/** Whether the cpu backend is expected to finish the run before the gpu backend would. */
export function shortRunOnCpu(run: RunSize): boolean {
  const perThread = run.vif ? CPU_FRAMES_PER_THREAD.withVif : CPU_FRAMES_PER_THREAD.withoutVif;
  return run.frames * run.width * run.height * run.renditions <= perThread * 1920 * 1080 * run.threads;
}

/**
 * Whether `auto` scores this run on the cpu backend: its length is known before any frame is
 * read (knownRunFrames) and the cpu backend is expected to finish it first (shortRunOnCpu).
 * `formatOf` gives the reference's format (asked for only where the length may be known); a
 * run whose length or format cannot be known is not short.
 */
export async function autoRunsOnCpu(
  plan: RunPlan,
  reference: FrameInput,
  formatOf: () => Promise<FrameFormat>,
  run: { frameCnt?: number | undefined; frameSkipRef?: number | undefined; renditions: number; threads: number },
): Promise<boolean> {
  if (!runLengthKnowable(reference, run.frameCnt)) return false;
  const format = formatOf();
  const frames = await knownRunFrames(reference, format, run);
  if (frames === undefined) return false;
  const f = await format.catch(() => undefined);
  if (!f) return false;
  const vif = plan.instances.some((x) => x.definition.name === integerVif.name || x.definition.name === floatVif.name);
  return shortRunOnCpu({ frames, width: f.width, height: f.height, renditions: run.renditions, threads: run.threads, vif });
}

/** Whether the run's length may be known before its frames are read (knownRunFrames). */
export function runLengthKnowable(reference: FrameInput, frameCnt: number | undefined): boolean {
  return frameCnt !== undefined || (typeof reference === 'string' && sizedExtension(reference));
}

/**
 * The frames a run reads, where known without reading them: the reference file's frames
 * (a y4m file's size over its frames' size, each with its "FRAME\n" line: the header is
 * neglected, a few bytes against a frame's; a raw file's exactly) less the skipped ones,
 * and at most frameCnt. Undefined where neither is known, or the format cannot be read.
 */
export async function knownRunFrames(reference: FrameInput, format: Promise<FrameFormat>, options: { frameCnt?: number | undefined; frameSkipRef?: number | undefined }): Promise<number | undefined> {
  let frames = options.frameCnt ?? Number.POSITIVE_INFINITY;
  if (typeof reference === 'string' && sizedExtension(reference)) {
    try {
      const [info, f] = await Promise.all([stat(reference), format]);
      if (info.isFile()) {
        const perFrame = frameLayout(f).frameBytes + (path.extname(reference).toLowerCase() === '.y4m' ? 'FRAME\n'.length : 0);
        frames = Math.min(frames, Math.max(0, Math.floor(info.size / perFrame) - (options.frameSkipRef ?? 0)));
      }
    } catch {
      // Unreadable: the run's own opening reports it.
    }
  }
  return Number.isFinite(frames) ? frames : undefined;
}

function sizedExtension(file: string): boolean {
  const ext = path.extname(file).toLowerCase();
  return ext === '.y4m' || ext === '.yuv';
}

/**
 * Whether a gpu run's backend goes on a thread of its own (kernels/gpu-thread), where the
 * main thread keeps reading, pairing, the models and the writers. The thread pays only where
 * it is started before the run knows its length, overlapping the run's start
 * (cli/early-gpu-thread.ts: at the process's start, with the GPU driver loaded beside it).
 * Measured on the H100 (whole runs, paired with the same build on one thread, one lease):
 * v0 1080p 600 frames 0.91x the time, 100 frames 0.92x; VMAF v1 600 frames 0.90x, 100 frames
 * 0.94x; v0 2160p 200 frames 1.00x. So a run takes a thread started early for it; without one
 * (the library's runs), starting it at the backend's opening pays only for runs with gpu
 * extractor kernels (v1's CAMBI: sixteen dispatches a frame, much host work a frame) of at
 * least THREAD_FRAMES 1080p frames over every rendition, or of unknown length (a live or
 * compressed input): v1 600 frames 0.90-0.96x, v0 100 frames 1.13x, 2160p 1.07x.
 */
export async function gpuThreadPays(
  plan: RunPlan,
  reference: FrameInput,
  formatOf: () => Promise<FrameFormat>,
  run: { frameCnt?: number | undefined; frameSkipRef?: number | undefined; renditions: number },
): Promise<boolean> {
  const forced = gpuThreadForced();
  if (forced !== undefined) return forced;
  if (hasPrestartedGpuThread()) return true;
  if (!planHasGpuKernels(plan)) return false;
  if (!runLengthKnowable(reference, run.frameCnt)) return true;
  const format = formatOf();
  const frames = await knownRunFrames(reference, format, run);
  const f = await format.catch(() => undefined);
  if (frames === undefined || !f) return true;
  return frames * f.width * f.height * run.renditions >= THREAD_FRAMES * 1920 * 1080;
}
