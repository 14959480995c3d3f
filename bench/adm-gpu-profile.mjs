// The GPU ADM kernel alone: per-dispatch GPU time (timestamp queries, where the adapter has
// them) and back-to-back throughput, on random planes. Build first (npm run build).
//
//   node bench/adm-gpu-profile.mjs [WxHxB ...] [--frames N] [--adapter name] [--egl1 on|off|both]
//   node bench/adm-gpu-profile.mjs 1920x1080x8 3840x2160x10 --frames 300 --egl1 both
//
// --egl1: the core's kernel with its gain-limit-1 variant (on, the default: AdmKernel.create,
// what a run with a NEG model computes), without it (off: createWithoutEgl1, every other
// run), or both, one after the other.
//
// Throughput: N frames encoded back to back, 8 per command buffer, the same two planes and
// one stats slot per frame, timed from the first submit to onSubmittedWorkDone: the ADM
// kernel's share of a frame with nothing else on the queue (no upload, no readback).
import { AdmKernel, ADM_STATS_LENGTH } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { geometriesOf, openProfileDevice, printDispatchTimes, printThroughput, takeOption, warmUp } from './lib/kernel-profile.mjs';

const args = process.argv.slice(2);
const frames = Number(takeOption(args, '--frames', 200));
const adapter = takeOption(args, '--adapter', undefined);
const egl1 = takeOption(args, '--egl1', 'on');
if (!['on', 'off', 'both'].includes(egl1)) throw new Error(`--egl1 takes on, off or both, not ${egl1}`);
const variants = egl1 === 'both' ? [true, false] : [egl1 === 'on'];
const geometries = geometriesOf(args);

const { gpu, timestamps, close } = await openProfileDevice('adm profile', adapter);
const d = gpu.device;

let seed = 0x12345678;
const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) >>> 24);

for (const g of geometries) {
  const bytes = g.width * g.height * (g.bitDepth === 8 ? 1 : 2);
  const size = Math.ceil(bytes / 4) * 4;
  const plane = (distort) => {
    const b = d.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const data = new Uint8Array(size);
    for (let i = 0; i < size; i++) data[i] = rnd();
    if (g.bitDepth !== 8) {
      const w = new Uint16Array(data.buffer);
      const max = (1 << g.bitDepth) - 1;
      for (let i = 0; i < w.length; i++) w[i] &= max;
    }
    if (distort) for (let i = 0; i < size; i += 7) data[i] ^= 3;
    d.queue.writeBuffer(b, 0, data);
    return b;
  };
  const ref = plane(false), dis = plane(true);
  const slots = 8;
  const slotBytes = 8 * ADM_STATS_LENGTH;
  const out = d.createBuffer({ size: slots * slotBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  for (const withEgl1 of variants) {
    const t0 = performance.now();
    const kernel = await (withEgl1 ? AdmKernel.create(gpu, g) : AdmKernel.createWithoutEgl1(gpu, g));
    const createMs = performance.now() - t0;
    const label = `${g.width}x${g.height} ${g.bitDepth}-bit ${withEgl1 ? 'with' : 'without'} egl_1`;
    const pair = { ref, dis };
    await warmUp(gpu, kernel, pair, out);
    if (timestamps) await printDispatchTimes(gpu, kernel, pair, out, frames, label);
    await printThroughput(gpu, kernel, pair, out, { frames, slots, slotBytes, label, createMs, note: `; scratch ${(kernel.scratchBytes / 2 ** 20).toFixed(1)} MiB` });
    kernel.destroy();
  }
  for (const b of [ref, dis, out]) b.destroy();
}
close();
