/**
 * A start-up check of the adapter's native float arithmetic for lib/f32.wgsl's native paths.
 *
 * Those paths take the GPU's own float *, + and - where Vulkan's rules make them correctly
 * rounded (normal inputs and result), and rely on no contraction reaching a product (f32.wgsl
 * explains the guard). A driver that rounds differently (another rounding mode, a fused
 * product) would change last bits silently, so before a float kernel is used on a device, one
 * small dispatch compares the native paths with the integer-only ones on ties, products and
 * sums at the subnormal and overflow edges, cancellations and random operands. Any difference
 * turns the native paths off on that device (F32_NATIVE = 0 for every float kernel): slower,
 * the same bits. Runs once per device, only where a float kernel is created
 * (createF32Pipeline, which compiles the likely variant meanwhile). Its verdict is kept
 * between runs (startup-cache.ts) for the same adapter and driver (the adapter's info, its
 * description naming the driver's version), the same Dawn, and this very probe.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GpuDevice } from './device.js';
import { fileDigest, keepValue, keptValue, startupCacheDir } from './startup-cache.js';
import { loadWgsl } from './wgsl.js';

const CASES = 4096;
const probes = new WeakMap<GpuDevice, Promise<boolean>>();

/** The override constants a kernel including lib/f32.wgsl is created with on `gpu`. */
export async function f32Constants(gpu: GpuDevice): Promise<{ F32_NATIVE: number }> {
  let probe = probes.get(gpu);
  if (!probe) {
    probe = keptVerdict(gpu);
    probes.set(gpu, probe);
    // A failed probe (a lost device) is not kept: the error goes to this caller, a later one tries again.
    probe.catch(() => probes.delete(gpu));
  }
  return { F32_NATIVE: (await probe) ? 1 : 0 };
}

/**
 * Compiles a kernel that includes lib/f32.wgsl with the F32_NATIVE this device's probe allows.
 * The native variant (what the probe has found on every adapter measured) starts compiling at
 * once, beside the probe, rather than after it: the probe is then off a run's start-up path.
 * Where the probe finds the native paths inexact, the integer-only variant is compiled and
 * returned instead.
 */
export async function createF32Pipeline(
  gpu: GpuDevice,
  source: string,
  options: { label: string; entryPoint?: string; constants?: Record<string, number> },
): Promise<GPUComputePipeline> {
  const withNative = (native: number) => ({ ...options, constants: { ...options.constants, F32_NATIVE: native } });
  const speculative = gpu.createComputePipeline(source, withNative(1));
  speculative.catch(() => undefined); // awaited below, or not needed
  const { F32_NATIVE } = await f32Constants(gpu);
  return F32_NATIVE === 1 ? speculative : gpu.createComputePipeline(source, withNative(0));
}

const f32 = new Float32Array(1);
const f32Words = new Uint32Array(f32.buffer);
const bits = (x: number): number => ((f32[0] = x), f32Words[0]!);
const floatOf = (w: number): number => ((f32Words[0] = w), f32[0]!);

/** The probe's (a, b, c) triples, the same on every run (a fixed xorshift sequence). */
export function probeCases(n = CASES): Uint32Array {
  let s = 0x9e3779b9;
  const next = (): number => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
  const int = (k: number): number => next() % k;
  const withExp = (w: number, e: number): number => ((w & 0x807fffff) | (Math.max(0, Math.min(255, e)) << 23)) >>> 0;
  const out = new Uint32Array(3 * n);
  for (let i = 0; i < n; i++) {
    let a = next();
    let b = next();
    switch (i % 6) {
      case 0: { // products near the least normal (2^-126), either side
        const ea = 1 + int(253);
        a = withExp(a, ea);
        b = withExp(b, 128 - ea + int(5) - 2);
        break;
      }
      case 1: { // products near the largest float
        const ea = 1 + int(253);
        a = withExp(a, ea);
        b = withExp(b, 254 - (ea - 127) - int(2));
        break;
      }
      case 2: // odd 12-bit by 13-bit significands: products exactly halfway between floats
        a = bits((2049 + 2 * int(1023)) * 2 ** (int(40) - 20));
        b = bits((4097 + 2 * int(2047)) * 2 ** (int(40) - 20));
        break;
      default: // moderate magnitudes, as the float kernels form them
        a = withExp(a, 100 + int(56));
        b = withExp(b, 100 + int(56));
    }
    const p = Math.fround(floatOf(a) * floatOf(b));
    // c cancels the product (an FMA would leave its rounding error), nearly, or is random.
    let c: number;
    switch (int(4)) {
      case 0: c = bits(-p); break;
      case 1: c = (bits(-p) + (int(2) === 0 ? 1 : -1)) >>> 0; break;
      case 2: c = bits(-p * (1 + (next() / 2 ** 32 - 0.5) * 2 ** -20)); break;
      default: c = withExp(next(), 100 + int(56));
    }
    out.set([a, b, c], 3 * i);
  }
  return out;
}

/** The probe's verdict for `gpu`: kept from an earlier run on the same adapter, driver and Dawn, or found now (and kept). */
async function keptVerdict(gpu: GpuDevice): Promise<boolean> {
  const key = startupCacheDir() === null ? undefined : probeKey(gpu);
  const kept = key === undefined ? undefined : keptValue('f32-probe', key);
  if (kept === 'exact' || kept === 'inexact') return kept === 'exact';
  const exact = await nativeFloatsExact(gpu);
  if (key !== undefined) keepValue('f32-probe', key, exact ? 'exact' : 'inexact');
  return exact;
}

/**
 * What the verdict depends on: the adapter and its driver (the info's description names the
 * driver's version), Dawn's release (the webgpu package's version) and this probe's own code
 * (its cases and its kernel); undefined where one of them cannot be read.
 */
function probeKey(gpu: GpuDevice): string | undefined {
  const own = fileDigest(fileURLToPath(import.meta.url));
  let dawn: string | undefined;
  try {
    const entry = createRequire(import.meta.url).resolve('webgpu');
    dawn = (JSON.parse(readFileSync(join(dirname(entry), 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    dawn = undefined;
  }
  if (own === undefined || dawn === undefined) return undefined;
  const { vendor, architecture, device, description } = gpu.adapterInfo;
  return JSON.stringify({ vendor, architecture, device, description, dawn, probe: own, kernel: loadWgsl('f32-probe.wgsl') });
}

/** Whether every native path gives the integer path's bits on the probe's cases. */
async function nativeFloatsExact(gpu: GpuDevice): Promise<boolean> {
  const d = gpu.device;
  const cases = probeCases();
  const n = cases.length / 3;
  const pipeline = await gpu.createComputePipeline(loadWgsl('f32-probe.wgsl'), { label: 'f32 probe' });
  const input = d.createBuffer({ size: cases.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: 'f32 probe cases' });
  const masks = d.createBuffer({ size: 4 * n, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC, label: 'f32 probe masks' });
  const params = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'f32 probe params' });
  try {
    d.queue.writeBuffer(input, 0, cases);
    d.queue.writeBuffer(params, 0, new Uint32Array([n, 0, 0, 0]));
    const enc = d.createCommandEncoder({ label: 'f32 probe' });
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, d.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: input } }, { binding: 1, resource: { buffer: masks } }, { binding: 2, resource: { buffer: params } }],
    }));
    pass.dispatchWorkgroups(Math.ceil(n / 64));
    pass.end();
    d.queue.submit([enc.finish()]);
    const got = new Uint32Array(await gpu.read(masks));
    return got.every((m) => m === 0);
  } finally {
    input.destroy();
    masks.destroy();
    params.destroy();
  }
}
