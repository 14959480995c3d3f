#!/usr/bin/env node
// How often the SSIM kernel's device pooling (common/ssim-maps.wgsl pool_*) sums a chunk
// term by term instead of through a binade map, and how many group maps its walk applied or
// walked a level down, on a clip: runs float_ssim's kernel (at
// its automatic scale) and float_ms_ssim's (5 scales) on every frame of a y4m pair (8-bit
// 4:2:0) and prints, per kernel and per sum, the chunks taken each way and the group maps.
//   node bench/ssim-pool-paths.mjs ref.y4m dis.y4m [frames]
import { openSync, readSync, fstatSync } from 'node:fs';
import '../dist/index.js'; // the extractor registry first (the gpu parts import their definitions)
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { pictureLayout } from '../dist/kernels/gpu/picture-planes.js';
import { floatSsimGpu } from '../dist/extractors/float_ssim/float_ssim-gpu.js';
import { floatMsSsimGpu } from '../dist/extractors/float_ms_ssim/float_ms_ssim-gpu.js';

const [refPath, disPath, limit] = process.argv.slice(2);
function y4m(path) {
  const fd = openSync(path, 'r');
  const head = Buffer.alloc(256);
  readSync(fd, head, 0, 256, 0);
  const nl = head.indexOf(10);
  const header = head.subarray(0, nl).toString('latin1');
  const width = Number(/ W(\d+)/.exec(header)[1]);
  const height = Number(/ H(\d+)/.exec(header)[1]);
  const frameBytes = 6 + (width * height * 3) / 2;
  const frames = Math.floor((fstatSync(fd).size - nl - 1) / frameBytes);
  const luma = (k) => {
    const b = new Uint8Array(width * height);
    readSync(fd, b, 0, b.length, nl + 1 + k * frameBytes + 6);
    return b;
  };
  return { width, height, frames, luma };
}
const ref = y4m(refPath);
const dis = y4m(disPath);
const frames = Math.min(ref.frames, dis.frames, Number(limit ?? Infinity));
const gpu = await openGpuDevice({ label: 'ssim pool paths' });
const format = { width: ref.width, height: ref.height, bitDepth: 8, chroma: '420' };
const layout = pictureLayout(format, false);
const ctx = { gpu, options: { scale: 0 }, format, layout, reducer: undefined };
const kernels = { float_ssim: await floatSsimGpu.create(ctx), float_ms_ssim: await floatMsSsimGpu.create({ ...ctx, options: {} }) };
const upload = (plane) => {
  const buffer = gpu.device.createBuffer({ size: Math.ceil(plane.length / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  gpu.device.queue.writeBuffer(buffer, 0, plane);
  return buffer;
};
const out = gpu.device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE });
const t0 = performance.now();
for (let k = 0; k < frames; k++) {
  const inputs = { ref: { buffer: upload(ref.luma(k)), layout }, dis: { buffer: upload(dis.luma(k)), layout } };
  const enc = gpu.device.createCommandEncoder();
  kernels.float_ssim.encode(enc, inputs, { buffer: out, offset: 0 });
  kernels.float_ms_ssim.encode(enc, inputs, { buffer: out, offset: 256 });
  gpu.device.queue.submit([enc.finish()]);
  await gpu.device.queue.onSubmittedWorkDone();
  inputs.ref.buffer.destroy();
  inputs.dis.buffer.destroy();
}
const ms = (performance.now() - t0) / frames;
const names = ['ssim', 'l', 'c', 's'];
console.log(`${refPath}: ${ref.width}x${ref.height}, ${frames} frames, ${ms.toFixed(1)} ms a frame (both kernels, uploads and waits included)`);
for (const [name, kernel] of Object.entries(kernels)) {
  const read = gpu.device.createBuffer({ size: 128, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = gpu.device.createCommandEncoder();
  enc.copyBufferToBuffer(kernel.diagnostics.counters, 0, read, 0, 128);
  gpu.device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const c = new Uint32Array(read.getMappedRange().slice(0));
  // Per sum, 8 words apart: chunks through maps, chunks term by term, group maps applied, group maps walked a level down, maps tried.
  const parts = names.map((n, q) => `${n} ${c[8 * q + 1]}/${c[8 * q] + c[8 * q + 1]} (${((100 * c[8 * q + 1]) / (c[8 * q] + c[8 * q + 1])).toFixed(2)}%)`);
  console.log(`  ${name}: chunks summed term by term: ${parts.join(', ')}`);
  const walk = names.map((n, q) => `${n} ${c[8 * q + 2]} applied, ${c[8 * q + 3]} walked`);
  console.log(`  ${name}: group maps: ${walk.join(', ')}`);
  const steps = names.map((n, q) => `${n} ${(c[8 * q + 4] / frames).toFixed(0)} maps tried + ${((c[8 * q + 1] * 32) / frames).toFixed(0)} terms at most`);
  console.log(`  ${name}: serial walk a frame: ${steps.join(', ')}`);
}
process.exit(0);
