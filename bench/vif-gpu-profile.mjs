// The GPU VIF kernel alone: per-dispatch GPU time (timestamp queries, where the adapter has
// them) and back-to-back throughput, on synthetic planes. Build first (npm run build).
//
//   node bench/vif-gpu-profile.mjs [WxHxB ...] [--frames N] [--content noise|smooth|mixed] [--adapter name]
//         [--tile WGxTWxTH] [--check]
//   node bench/vif-gpu-profile.mjs 1920x1080x8 3840x2160x10 --frames 300
//
// --content: noise (uniform random: nearly every pixel takes the log/gain path, the worst
// case), smooth (gradients + mild noise, a distorted copy: closer to video), mixed (default:
// smooth with noisy blocks). --check compares the accumulators with the cpu backend once.
// Throughput: N frames encoded back to back, 8 per command buffer, the same two planes and
// one stats slot per frame, timed from the first submit to onSubmittedWorkDone: the VIF
// kernel's share of a frame with nothing else on the queue (no upload, no readback).
import { VifKernel } from '../dist/kernels/gpu/vif/vif-kernel.js';
import { geometriesOf, openProfileDevice, printDispatchTimes, printThroughput, takeFlag, takeOption, warmUp } from './lib/kernel-profile.mjs';

const args = process.argv.slice(2);
const frames = Number(takeOption(args, '--frames', 200));
const adapter = takeOption(args, '--adapter', undefined);
const content = takeOption(args, '--content', 'mixed');
const tileArg = takeOption(args, '--tile', undefined);
const check = takeFlag(args, '--check');
const tile = tileArg ? (([workgroupSize, tileWidth, tileHeight]) => ({ workgroupSize, tileWidth, tileHeight }))(tileArg.split('x').map(Number)) : undefined;
const geometries = geometriesOf(args);

const { gpu, timestamps, close } = await openProfileDevice('vif profile', adapter, `; content: ${content}`);
const d = gpu.device;

let seed = 0x12345678;
const rnd = () => (seed = (seed * 1664525 + 1013904223) >>> 0) / 4294967296;

function planes(g) {
  const { width: w, height: h, bitDepth: bd } = g;
  const max = (1 << bd) - 1;
  const ref = bd === 8 ? new Uint8Array(w * h) : new Uint16Array(w * h);
  const dis = bd === 8 ? new Uint8Array(w * h) : new Uint16Array(w * h);
  const clamp = (v) => Math.max(0, Math.min(max, Math.round(v)));
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      const smooth = max * (0.5 + 0.3 * Math.sin(x / 37) * Math.cos(y / 23) + 0.1 * Math.sin((x + y) / 7));
      const noisy = content === 'noise' || (content === 'mixed' && ((x >> 6) + (y >> 6)) % 3 === 0);
      const r = noisy ? rnd() * max : smooth + (rnd() - 0.5) * max * 0.02;
      ref[i] = clamp(r);
      dis[i] = clamp(r + (rnd() - 0.5) * max * (noisy ? 0.3 : 0.05));
    }
  }
  return { ref, dis };
}

function upload(p) {
  const size = Math.ceil(p.byteLength / 4) * 4;
  const b = d.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const bytes = new Uint8Array(size);
  bytes.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength));
  d.queue.writeBuffer(b, 0, bytes);
  return b;
}

for (const g of geometries) {
  const host = planes(g);
  const ref = upload(host.ref), dis = upload(host.dis);
  const t0 = performance.now();
  const kernel = await VifKernel.create(gpu, g, tile ? { tile } : {});
  const createMs = performance.now() - t0;
  const slots = 8;
  const out = d.createBuffer({ size: slots * 160, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const label = `${g.width}x${g.height} ${g.bitDepth}-bit`;

  const pair = { ref, dis };
  await warmUp(gpu, kernel, pair, out);

  if (check) {
    const { loadNative } = await import('../dist/kernels/native.js');
    const cpu = (await loadNative().computeFrameStats(host.ref, host.dis, g.width, g.height, g.bitDepth)).stats;
    const words = new Uint32Array(await gpu.read(out, 160));
    let same = true;
    for (let k = 0; k < 20; k++) {
      const v = BigInt.asIntN(64, (BigInt(words[2 * k + 1]) << 32n) | BigInt(words[2 * k]));
      if (v !== cpu[k]) same = false;
    }
    console.log(`${label}: accumulators ${same ? 'equal the cpu backend' : 'DIFFER FROM THE CPU BACKEND'}`);
  }

  if (timestamps) await printDispatchTimes(gpu, kernel, pair, out, frames, label);
  await printThroughput(gpu, kernel, pair, out, { frames, slots, slotBytes: 160, label, createMs, note: `; tile ${JSON.stringify(kernel.tile)}` });
  kernel.destroy();
  for (const b of [ref, dis, out]) b.destroy();
}
close();
