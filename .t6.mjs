import { openGpuDevice } from './dist/kernels/gpu/device.js';
import { MotionKernel } from './dist/kernels/gpu/motion/motion-kernel.js';
import { loadNative } from './dist/kernels/native.js';
import { readI64 } from './dist/kernels/gpu/wgsl.js';
const native = loadNative();
const gpu = await openGpuDevice();
const d = gpu.device;
function upload(luma) {
  const bytes = new Uint8Array(luma.buffer, luma.byteOffset, luma.byteLength);
  const size = Math.ceil(bytes.length / 4) * 4;
  const b = d.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
  new Uint8Array(b.getMappedRange()).set(bytes); b.unmap(); return b;
}
let seed = 1;
const rnd = () => { seed = (seed * 1103515245 + 12345) >>> 0; return seed / 2**32; };
let fails = 0;
for (let t = 0; t < 40; t++) {
  const w = 3 + Math.floor(rnd() * 300), h = 3 + Math.floor(rnd() * 120);
  const bd = [8, 10, 12, 16][t % 4];
  const mode = t % 3; // 0: random full, 1: correlated, 2: extreme u16 beyond depth
  const A = bd === 8 ? Uint8Array : Uint16Array;
  const max = mode === 2 && bd > 8 ? 65535 : (1 << bd) - 1;
  const p = new A(w * h), c = new A(w * h);
  for (let i = 0; i < w * h; i++) { p[i] = Math.floor(rnd() * (max + 1)); c[i] = mode === 1 ? Math.min(max, Math.max(0, p[i] + Math.floor((rnd() - 0.5) * 20))) : (rnd() < 0.5 ? 0 : max); }
  const want = native.motionSad(p, c, w, h, bd);
  const k = await MotionKernel.create(gpu, { width: w, height: h, bitDepth: bd });
  const pb = upload(p), cb = upload(c);
  const stats = d.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const enc = d.createCommandEncoder();
  k.encode(enc, { ref: cb, dis: cb, prevRef: pb }, { buffer: stats, offset: 24 });
  d.queue.submit([enc.finish()]);
  const got = readI64(new Uint32Array(await gpu.read(stats)), 6);
  if (BigInt.asUintN(64, got) !== want) { fails++; console.log('MISMATCH', w, h, bd, mode, got, want); }
  k.destroy(); pb.destroy(); cb.destroy(); stats.destroy();
}
console.log('fails', fails);
gpu.destroy();
