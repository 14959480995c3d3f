// The GPU ADM kernel alone: per-dispatch GPU time (timestamp queries, where the adapter has
// them) and back-to-back throughput, on random planes. Build first (npm run build).
//
//   node bench/adm-gpu-profile.mjs [WxHxB ...] [--frames N] [--adapter name]
//   node bench/adm-gpu-profile.mjs 1920x1080x8 3840x2160x10 --frames 300
//
// Throughput: N frames encoded back to back, 8 per command buffer, the same two planes and
// one stats slot per frame, timed from the first submit to onSubmittedWorkDone: the ADM
// kernel's share of a frame with nothing else on the queue (no upload, no readback).
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { AdmKernel } from '../dist/kernels/gpu/adm/adm-kernel.js';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const frames = Number(opt('--frames', 200));
const adapter = opt('--adapter', undefined);
const geometries = (args.length ? args : ['1920x1080x8']).map((g) => {
  const [width, height, bitDepth] = g.split('x').map(Number);
  return { width, height, bitDepth };
});

const keepAlive = setInterval(() => {}, 1000);
const gpu = await openGpuDevice({ label: 'adm profile', ...(adapter ? { adapter } : {}) });
const d = gpu.device;
const timestamps = gpu.features.has('timestamp-query');
console.log(`adapter: ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}; timestamps: ${timestamps ? 'yes' : 'no'}`);

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

  // warm-up
  for (let i = 0; i < 3; i++) {
    const enc = d.createCommandEncoder();
    kernel.encode(enc, { ref, dis }, { buffer: out, offset: 0 });
    d.queue.submit([enc.finish()]);
  }
  await d.queue.onSubmittedWorkDone();

  if (timestamps) {
    const qs = d.createQuerySet({ type: 'timestamp', count: 12 });
    const resolve = d.createBuffer({ size: 96, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    const reps = Math.min(frames, 50);
    let names = [];
    const sum = new Array(6).fill(0);
    for (let r = 0; r < reps; r++) {
      const enc = d.createCommandEncoder();
      names = kernel.encodeProfiled(enc, { ref, dis }, { buffer: out, offset: 0 }, qs, 0);
      enc.resolveQuerySet(qs, 0, 2 * names.length, resolve, 0);
      d.queue.submit([enc.finish()]);
      const t = new BigUint64Array(await gpu.read(resolve, 16 * names.length));
      for (let i = 0; i < names.length; i++) sum[i] += Number(t[2 * i + 1] - t[2 * i]) / 1000;
    }
    const parts = names.map((n, i) => `${n} ${(sum[i] / reps).toFixed(1)}`);
    const total = sum.reduce((a, b) => a + b, 0) / reps;
    console.log(`${label}: per dispatch (us, one pass each): ${parts.join(', ')}; sum ${total.toFixed(1)} us`);
    qs.destroy();
    resolve.destroy();
  }

  const t1 = performance.now();
  for (let f = 0; f < frames; f += slots) {
    const enc = d.createCommandEncoder();
    for (let i = 0; i < slots && f + i < frames; i++) kernel.encode(enc, { ref, dis }, { buffer: out, offset: 288 * i });
    d.queue.submit([enc.finish()]);
  }
  await d.queue.onSubmittedWorkDone();
  const ms = performance.now() - t1;
  console.log(`${label}: ${frames} frames in ${ms.toFixed(1)} ms: ${(frames / (ms / 1000)).toFixed(0)} fps (${((ms * 1000) / frames).toFixed(1)} us/frame); kernel create ${createMs.toFixed(0)} ms`);
  kernel.destroy();
  for (const b of [ref, dis, out]) b.destroy();
}
gpu.destroy();
clearInterval(keepAlive);
