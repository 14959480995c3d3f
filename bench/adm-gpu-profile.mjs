// The GPU ADM kernel alone: per-dispatch GPU time (timestamp queries, where the adapter has
// them) and back-to-back throughput, on random planes. Build first (npm run build).
//
//   node bench/adm-gpu-profile.mjs [WxHxB ...] [--frames N] [--adapter name]
//   node bench/adm-gpu-profile.mjs 1920x1080x8 3840x2160x10 --frames 300
//
// Throughput: N frames encoded back to back, 8 per command buffer, the same two planes and
// one stats slot per frame, timed from the first submit to onSubmittedWorkDone: the ADM
// kernel's share of a frame with nothing else on the queue (no upload, no readback).
import { AdmKernel } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { geometriesOf, openProfileDevice, printDispatchTimes, printThroughput, takeOption, warmUp } from './lib/kernel-profile.mjs';

const args = process.argv.slice(2);
const frames = Number(takeOption(args, '--frames', 200));
const adapter = takeOption(args, '--adapter', undefined);
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
  const t0 = performance.now();
  const kernel = await AdmKernel.create(gpu, g);
  const createMs = performance.now() - t0;
  const slots = 8;
  const out = d.createBuffer({ size: slots * 288, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const label = `${g.width}x${g.height} ${g.bitDepth}-bit`;

  const pair = { ref, dis };
  await warmUp(gpu, kernel, pair, out);
  if (timestamps) await printDispatchTimes(gpu, kernel, pair, out, frames, label);
  await printThroughput(gpu, kernel, pair, out, { frames, slots, slotBytes: 288, label, createMs });
  kernel.destroy();
  for (const b of [ref, dis, out]) b.destroy();
}
close();
