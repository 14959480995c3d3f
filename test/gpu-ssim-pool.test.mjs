// The SSIM kernel's device pooling (common/ssim-maps.wgsl pool_*): per scale, libvmaf's four
// double running sums (SSIM, l, c, s terms) must be the sequential sums' exact bits, whether
// a chunk of terms went through its binade map (the fast path) or was summed term by term
// (the fallback: the first chunk, a sum crossing a power of two, a negative or near-zero
// sum). On seeded random pictures, the sums read back equal JS's own sequential double sums
// of the kernel's terms (JS adds doubles with IEEE round-to-nearest-even, as the C does), and
// the path counters show both paths taken: natural-like content mostly mapped, content built
// to defeat the maps (distorted = inverted reference: negative structure, negative sums;
// independent noise: sums near zero) mostly or wholly summed term by term. The terms
// themselves are checked against the cpu backend end to end in gpu-ssim.test.mjs.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { pictureLayout } from '../dist/kernels/gpu/picture-planes.js';
import { SsimMapsKernel } from '../dist/extractors/common/ssim-maps-gpu.js';
import { makeRng, uploadPlane } from './helpers/gpu.mjs';

async function readBack(gpu, buffer, bytes) {
  const read = gpu.device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = gpu.device.createCommandEncoder();
  enc.copyBufferToBuffer(buffer, 0, read, 0, bytes);
  gpu.device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const copy = read.getMappedRange().slice(0);
  read.unmap();
  read.destroy();
  return copy;
}

/** Runs the one-scale kernel on a w x h 8-bit pair; its sums, the terms and the path counters. */
async function pool(gpu, width, height, ref, dis) {
  const format = { width, height, bitDepth: 8, chroma: '420' };
  const layout = pictureLayout(format, false);
  const kernel = await SsimMapsKernel.create({ gpu, options: {}, format, layout, reducer: undefined }, [{ maps: true }]);
  try {
    const inputs = { ref: { buffer: uploadPlane(gpu, ref), layout }, dis: { buffer: uploadPlane(gpu, dis), layout } };
    const out = gpu.device.createBuffer({ size: 8 * kernel.statsCount, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const enc = gpu.device.createCommandEncoder();
    kernel.encode(enc, inputs, { buffer: out, offset: 0 });
    gpu.device.queue.submit([enc.finish()]);
    const count = (width - 10) * (height - 10);
    const sums = new Float64Array(await readBack(gpu, out, 8 * kernel.statsCount));
    const terms = new Float64Array(await readBack(gpu, kernel.diagnostics.terms, 8 * 4 * count));
    const counters = new Uint32Array(await readBack(gpu, kernel.diagnostics.counters, 32));
    out.destroy();
    inputs.ref.buffer.destroy();
    inputs.dis.buffer.destroy();
    return { sums, terms, counters, count };
  } finally {
    kernel.destroy();
  }
}

const NAMES = ['ssim', 'l', 'c', 's'];

describe('SSIM pooling on the gpu: exact sequential double sums, mapped and term by term', function () {
  this.timeout(1200000);
  let gpu;
  before(async () => (gpu = await openGpuDevice({ label: 'ssim pool tests' })));
  after(() => gpu?.destroy?.());

  const R = makeRng(Number(process.env.GPU_SSIM_POOL_SEED ?? 7112026) >>> 0);
  // natural: a textured gradient, distorted by small noise; inverted: 255 - ref (structure
  // negative); noise: independent noise (structure around 0, the s sum wandering near 0).
  // mixed: natural in the top half, inverted below (the s sum rises, then falls through
  // the powers of two and zero: mapped chunks with negative terms, crossings downwards).
  const kinds = ['natural', 'inverted', 'noise', 'mixed', 'natural', 'inverted', 'mixed'];
  kinds.forEach((kind, c) => {
    it(`case ${c}: ${kind}`, async function () {
      const width = R.range(150, 230);
      const height = R.range(120, 170);
      const ref = new Uint8Array(width * height);
      const dis = new Uint8Array(width * height);
      const fx = 0.5 + R.float() * 2;
      const fy = 0.5 + R.float() * 2;
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const i = y * width + x;
          const v = Math.min(255, Math.max(0, Math.floor(128 + 90 * Math.sin((x * fx) / 13 + (y * fy) / 9) + R.range(-6, 6))));
          ref[i] = v;
          if (kind === 'natural' || (kind === 'mixed' && y < height / 2)) dis[i] = Math.min(255, Math.max(0, v + R.range(-10, 10)));
          else if (kind === 'inverted' || (kind === 'mixed' && y >= height / 2)) dis[i] = Math.min(255, Math.max(0, 255 - v + R.range(-3, 3)));
          else dis[i] = R.int(256);
        }
      }
      const { sums, terms, counters, count } = await pool(gpu, width, height, ref, dis);
      const chunks = Math.ceil(count / 256);
      const paths = [];
      for (let q = 0; q < 4; q++) {
        let s = 0;
        for (let i = 0; i < count; i++) s += terms[q * count + i];
        assert.ok(Object.is(sums[q], s), `${kind} ${width}x${height} ${NAMES[q]}: gpu ${sums[q]} sequential ${s}`);
        assert.equal(counters[2 * q] + counters[2 * q + 1], chunks, `${NAMES[q]}: every chunk counted`);
        paths.push(`${NAMES[q]} ${counters[2 * q]}/${chunks} mapped`);
      }
      console.log(`      ${kind} ${width}x${height}: ${paths.join(', ')}`);
      const mapped = (q) => counters[2 * q] / chunks;
      if (kind === 'natural') {
        // Only the first chunk and the crossings of powers of two go term by term.
        for (let q = 0; q < 4; q++) assert.ok(mapped(q) > 0.8, `${kind} ${NAMES[q]}: ${counters[2 * q]}/${chunks} mapped`);
      } else if (kind === 'inverted') {
        // Negative sums: every chunk of the SSIM and s sums term by term; l and c still mapped.
        for (const q of [0, 3]) assert.equal(counters[2 * q], 0, `${kind} ${NAMES[q]}: ${counters[2 * q]} mapped`);
        for (const q of [1, 2]) assert.ok(mapped(q) > 0.8, `${kind} ${NAMES[q]}`);
      }
    });
  });
});
