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

/** Runs the one-scale kernel on a w x h 8-bit pair (in bands of at most bandRows rows); its sums, the last band's terms and the path counters. */
async function pool(gpu, width, height, ref, dis, bandRows = Infinity) {
  const format = { width, height, bitDepth: 8, chroma: '420' };
  const layout = pictureLayout(format, false);
  const kernel = await SsimMapsKernel.create({ gpu, options: {}, format, layout, reducer: undefined }, [{ maps: true }], bandRows);
  try {
    const inputs = { ref: { buffer: uploadPlane(gpu, ref), layout }, dis: { buffer: uploadPlane(gpu, dis), layout } };
    const out = gpu.device.createBuffer({ size: 8 * kernel.statsCount, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const enc = gpu.device.createCommandEncoder();
    kernel.encode(enc, inputs, { buffer: out, offset: 0 });
    gpu.device.queue.submit([enc.finish()]);
    const count = (width - 10) * Math.min(bandRows, height - 10);
    const sums = new Float64Array(await readBack(gpu, out, 8 * kernel.statsCount));
    const terms = new Float64Array(await readBack(gpu, kernel.diagnostics.terms, 8 * 4 * count));
    const counters = new Uint32Array(await readBack(gpu, kernel.diagnostics.counters, 128));
    out.destroy();
    inputs.ref.buffer.destroy();
    inputs.dis.buffer.destroy();
    return { sums, terms, counters, count };
  } finally {
    kernel.destroy();
  }
}

const NAMES = ['ssim', 'l', 'c', 's'];
/** ssim-maps.wgsl's CHUNK: terms per chunk map. */
const CHUNK = 32;

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
      const chunks = Math.ceil(count / CHUNK);
      const paths = [];
      for (let q = 0; q < 4; q++) {
        let s = 0;
        for (let i = 0; i < count; i++) s += terms[q * count + i];
        assert.ok(Object.is(sums[q], s), `${kind} ${width}x${height} ${NAMES[q]}: gpu ${sums[q]} sequential ${s}`);
        const [mappedChunks, walkedChunks, groupsMapped, groupsWalked, tries] = counters.slice(8 * q, 8 * q + 5);
        assert.equal(mappedChunks + walkedChunks, chunks, `${NAMES[q]}: every chunk counted`);
        // Each step of the walk applies a map (a group's, or a chunk's), walks a group a level
        // down or sends a chunk term by term.
        const applied = tries - groupsWalked - walkedChunks;
        assert.ok(applied >= groupsMapped && applied <= groupsMapped + mappedChunks, `${NAMES[q]}: ${tries} steps`);
        paths.push(`${NAMES[q]} ${mappedChunks}/${chunks} mapped (${groupsMapped} group maps applied, ${groupsWalked} walked, ${tries} steps)`);
      }
      console.log(`      ${kind} ${width}x${height}: ${paths.join(', ')}`);
      const mapped = (q) => counters[8 * q] / chunks;
      // The walk: natural sums rise through a power of two every few groups, so most of
      // their chunks go through group maps, not one by one.
      const groupsMapped = (q) => counters[8 * q + 2];
      if (kind === 'natural') {
        // Only the first chunk and the crossings of powers of two go term by term.
        for (let q = 0; q < 4; q++) {
          assert.ok(mapped(q) > 0.8, `${kind} ${NAMES[q]}: ${counters[8 * q]}/${chunks} mapped`);
          assert.ok(groupsMapped(q) > 0 && groupsMapped(q) < counters[8 * q] / 4, `${kind} ${NAMES[q]}: ${groupsMapped(q)} group maps`);
        }
      } else if (kind === 'inverted') {
        // Negative sums (the SSIM and s sums) are mapped through their magnitudes too.
        for (let q = 0; q < 4; q++) assert.ok(mapped(q) > 0.8, `${kind} ${NAMES[q]}: ${counters[8 * q]}/${chunks} mapped`);
      }
    });
  });

  // Large pictures are pooled in bands, each band's walk starting from the sums the one
  // before left: the same bits as one band (both are the sequential sums).
  it('in bands of 7, 16 and 40 rows: the sums of one band', async function () {
    const width = 173;
    const height = 131;
    const ref = new Uint8Array(width * height);
    const dis = new Uint8Array(width * height);
    for (let i = 0; i < ref.length; i++) {
      const y = Math.floor(i / width);
      ref[i] = Math.floor(128 + 90 * Math.sin((i % width) / 11 + y / 7) + R.range(-6, 6));
      // Inverted below a third: the SSIM and s sums fall through zero in a later band.
      dis[i] = y < height / 3 ? Math.min(255, Math.max(0, ref[i] + R.range(-10, 10))) : 255 - ref[i];
    }
    const whole = await pool(gpu, width, height, ref, dis);
    for (const rows of [7, 16, 40]) {
      const banded = await pool(gpu, width, height, ref, dis, rows);
      for (let q = 0; q < 4; q++) assert.ok(Object.is(banded.sums[q], whole.sums[q]), `bands of ${rows} ${NAMES[q]}: ${banded.sums[q]} one band ${whole.sums[q]}`);
    }
    let s = 0;
    for (let i = 0; i < whole.count; i++) s += whole.terms[i];
    assert.ok(Object.is(whole.sums[0], s));
  });
});

/** The one-scale kernel for a w x h picture, pooling the given terms (4 x count doubles). */
async function poolTerms(gpu, width, height, terms) {
  const format = { width, height, bitDepth: 8, chroma: '420' };
  const layout = pictureLayout(format, false);
  const kernel = await SsimMapsKernel.create({ gpu, options: {}, format, layout, reducer: undefined }, [{ maps: true }]);
  try {
    gpu.device.queue.writeBuffer(kernel.diagnostics.terms, 0, terms);
    const out = gpu.device.createBuffer({ size: 8 * kernel.statsCount, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const enc = gpu.device.createCommandEncoder();
    await kernel.encodePoolingOfTerms(enc, { buffer: out, offset: 0 });
    gpu.device.queue.submit([enc.finish()]);
    const sums = new Float64Array(await readBack(gpu, out, 8 * kernel.statsCount));
    const counters = new Uint32Array(await readBack(gpu, kernel.diagnostics.counters, 128));
    out.destroy();
    return { sums, counters };
  } finally {
    kernel.destroy();
  }
}

// The walk on terms made to be hard, written straight into the kernel's terms (the same
// passes after pool_terms): sums through tens of binades up and down, through zero, with
// ties at every step, subnormal, huge and zero (+-0) terms, a band whose last chunk is
// partial, and one of fewer chunks than a group.
describe('SSIM pooling on the gpu: exact sequential double sums of made terms', function () {
  this.timeout(1200000);
  let gpu;
  before(async () => (gpu = await openGpuDevice({ label: 'ssim pool terms tests' })));
  after(() => gpu?.destroy?.());

  const R = makeRng(Number(process.env.GPU_SSIM_POOL_SEED ?? 24112026) >>> 0);
  const pick = (values) => values[R.int(values.length)];
  /** Per sum: rising through ~40 binades; falling from 1e6 through zero to -1e6; ties; segments of wild magnitudes (wild()). */
  const scenarios = [
    () => (i, n) => (1 + R.float()) * 2 ** ((40 * i) / n - 10),
    () => (i, n) => (i === 0 ? 1e6 : -(R.float() * 4e6) / n),
    // From 2^53 (unit 2): 1 and 3 are ties, 0.5 rounds away, -1 the first step goes below.
    () => (i) => (i === 0 ? 2 ** 53 : pick([1, 3, 1, 3, 0.5, -1, 2, 0, -0, 1.5])),
    () => wild(),
  ];
  /** Sums that keep crossing one power of two (2^p) both ways, by terms of many sizes and ties. */
  const around = (p, sign = 1) => () => {
    let s = 0;
    return (i) => {
      if (i === 0) return (s = sign * 2 ** p);
      const size = 2 ** (p - R.range(2, 60));
      const t = (sign * s < 2 ** p ? sign : -sign) * pick([size, size * (1 + R.float()), size * 1.5, 2 ** (p - 53), 3 * 2 ** (p - 54), 0]);
      s += t;
      return t;
    };
  };
  const hard = [
    around(20),
    around(0, -1),
    // Near the smallest normal: sums in and out of the subnormals.
    around(-1021),
    () => wild(),
  ];
  const wild = () => {
    let kind = 'unit';
    let left = 0;
    return () => {
      if (left-- <= 0) {
        kind = pick(['unit', 'subnormal', 'huge', 'vast', 'zero', 'unit', 'negative']);
        left = R.range(20, 600);
      }
      const sign = R.bool() ? -1 : 1;
      if (kind === 'subnormal') return sign * R.range(0, 1 << 20) * 5e-324;
      if (kind === 'huge') return sign * (1 + R.float()) * 2 ** 100;
      // Past f32's range: the binade guesses are infinite, the chunks summed term by term.
      if (kind === 'vast') return sign * (1 + R.float()) * 2 ** 800;
      if (kind === 'zero') return pick([0, -0]);
      if (kind === 'negative') return -R.float() * 3;
      return R.float() * 2;
    };
  };
  for (const [width, height, made] of [[140, 137, scenarios], [20, 30, scenarios], [233, 101, scenarios], [90, 120, hard]]) {
    it(`${width}x${height}: four hard sums${made === hard ? ' around powers of two' : ''}`, async function () {
      const count = (width - 10) * (height - 10);
      const terms = new Float64Array(4 * count);
      for (let q = 0; q < 4; q++) {
        const make = made[q]();
        for (let i = 0; i < count; i++) terms[q * count + i] = make(i, count);
      }
      const { sums, counters } = await poolTerms(gpu, width, height, terms);
      const chunks = Math.ceil(count / CHUNK);
      const paths = [];
      for (let q = 0; q < 4; q++) {
        let s = 0;
        for (let i = 0; i < count; i++) s += terms[q * count + i];
        assert.ok(Object.is(sums[q], s), `${width}x${height} sum ${q}: gpu ${sums[q]} sequential ${s}`);
        const [mappedChunks, walkedChunks, groupsMapped, groupsWalked, tries] = counters.slice(8 * q, 8 * q + 5);
        assert.equal(mappedChunks + walkedChunks, chunks, `sum ${q}: every chunk counted`);
        const applied = tries - groupsWalked - walkedChunks;
        assert.ok(applied >= groupsMapped && applied <= groupsMapped + mappedChunks, `sum ${q}: ${tries} steps`);
        paths.push(`${q}: ${mappedChunks}/${chunks} mapped (${groupsMapped} group maps applied, ${groupsWalked} walked, ${tries} steps)`);
      }
      console.log(`      ${width}x${height}: ${paths.join(', ')}`);
      if (chunks > 64 && made === scenarios) {
        // Rising, falling and tied sums go mostly through maps, largely group maps.
        for (let q = 0; q < 3; q++) {
          assert.ok(counters[8 * q] > 0.8 * chunks, `sum ${q}: ${counters[8 * q]}/${chunks} mapped`);
          assert.ok(counters[8 * q + 2] > 0, `sum ${q}: group maps applied`);
        }
      }
    });
  }
});
