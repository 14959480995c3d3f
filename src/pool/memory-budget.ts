/**
 * The run's frame buffers checked against the memory the machine can give, before any is
 * allocated. Linux overcommits: a pool of huge slots is granted virtually, and the OOM killer
 * ends the process once the slots are touched (no allocation ever fails, so no error can name
 * the cause). Refusing up front turns that into E_OUT_OF_MEMORY with the figures.
 */
import { constants as bufferConstants } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { freemem } from 'node:os';

import { VmafError } from '../errors.js';
import type { FrameFormat, PlaneSelection } from '../types.js';
import { chromaSize } from '../decode/frame-layout.js';

/** What the machine can give now, and where that figure comes from. */
export interface AvailableMemory {
  bytes: number;
  source: string;
}

/**
 * Test hook: VMAF_STREAM_TEST_AVAILABLE_BYTES=N replaces the reading (the tests cannot make
 * a machine short of memory without a cgroup).
 */
const TEST_OVERRIDE = 'VMAF_STREAM_TEST_AVAILABLE_BYTES';

function readNumber(file: string): number | undefined {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : undefined; // 'max': no limit
  } catch {
    return undefined;
  }
}

/**
 * MemAvailable (/proc/meminfo: free memory plus what the kernel can reclaim, the figure the
 * OOM killer's arithmetic is closest to) on Linux, os.freemem() elsewhere; lowered to the
 * cgroup's headroom (memory.max less memory.current, v2; v1's limit_in_bytes less usage)
 * when a limit is set, since a container is killed at its limit whatever the host has.
 */
export function availableMemory(): AvailableMemory {
  const override = process.env[TEST_OVERRIDE];
  if (override !== undefined && /^\d+$/.test(override)) return { bytes: Number(override), source: TEST_OVERRIDE };
  let best: AvailableMemory | undefined;
  try {
    const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) best = { bytes: Number(m[1]) * 1024, source: 'MemAvailable in /proc/meminfo' };
  } catch {
    // not Linux
  }
  best ??= { bytes: freemem(), source: 'free memory (os.freemem)' };
  const cgroups: Array<[string, string, string]> = [
    ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory.current', "the cgroup's memory.max less its use"],
    ['/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory/memory.usage_in_bytes', "the cgroup's memory limit less its use"],
  ];
  for (const [limitFile, usageFile, source] of cgroups) {
    const limit = readNumber(limitFile);
    // v1 says "no limit" with a huge number (about 2^63): only a limit below the host's counts.
    if (limit === undefined || limit >= Number.MAX_SAFE_INTEGER) continue;
    const headroom = Math.max(0, limit - (readNumber(usageFile) ?? 0));
    if (headroom < best.bytes) best = { bytes: headroom, source };
  }
  return best;
}

/** Bytes of one frame buffer: the luma plane, plus both chroma planes with planes 'all'. */
export function slotBytes(format: FrameFormat, planes: PlaneSelection | undefined): number {
  const luma = format.width * format.height;
  const chroma = planes === 'all' ? chromaSize(format) : undefined;
  const samples = luma + (chroma ? 2 * chroma.width * chroma.height : 0);
  return samples * (format.bitDepth > 8 ? 2 : 1);
}

export interface FrameMemoryPlan {
  /** Names the input whose frames are meant (the reference). */
  label: string;
  format: FrameFormat;
  planes: PlaneSelection | undefined;
  /** Inputs read at once (the reference and each rendition). */
  sources: number;
  /** Host frame pool slots per input. */
  poolSlots: number;
  /** Frames in flight (what the pool slots follow from), for the advice. */
  inFlight: number;
  /** GPU staging slots per input mapped in host memory (0 on the cpu backend). */
  stagingSlots: number;
  /** Bytes of one staging slot (the luma plane as the GPU takes it). */
  stagingSlotBytes: number;
}

/**
 * Throws E_OUT_OF_MEMORY when the run's frame pool and staging rings, at their full size,
 * need more than the machine can give. A frame over what one buffer may hold is left to the
 * reader's own E_FRAME_TOO_LARGE, which says that more precisely.
 */
export function checkFrameMemory(plan: FrameMemoryPlan, available: AvailableMemory = availableMemory()): void {
  const slot = slotBytes(plan.format, plan.planes);
  if (slot > bufferConstants.MAX_LENGTH) return;
  const pool = plan.sources * plan.poolSlots * slot;
  const staging = plan.sources * plan.stagingSlots * plan.stagingSlotBytes;
  const planned = pool + staging;
  if (planned <= available.bytes) return;
  const f = plan.format;
  const what = plan.planes === 'all' ? 'all planes' : 'luma';
  const parts = `${plan.sources} input${plan.sources === 1 ? '' : 's'} x ${plan.poolSlots} pool slots${staging > 0 ? ` + ${plan.sources} x ${plan.stagingSlots} GPU staging slots of ${plan.stagingSlotBytes} bytes` : ''}`;
  throw new VmafError(
    'E_OUT_OF_MEMORY',
    `${plan.label}: a ${f.width}x${f.height} ${f.bitDepth}-bit frame (${slot} bytes, ${what}) needs ${planned} bytes of frame buffers ` +
      `(${parts}), over the ${available.bytes} bytes this machine can give (${available.source}): ` +
      `use fewer frames in flight (${plan.inFlight} now: maxFramesInFlight, or fewer --threads) or fewer renditions at once`,
  );
}
