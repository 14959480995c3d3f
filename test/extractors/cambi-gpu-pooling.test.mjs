// cambi's spatial pooling on the GPU (cambi-pool.wgsl, cambi.cpp's finishStats): the radix
// selection of the k-th largest c value and the exact sum give libvmaf's order-dependent
// double mean bit for bit, or the frame is pooled on the host from its values. Randomized
// gpu == cpu at odd sizes and extreme content (flat frames where every c ties at 0, stripes
// where thousands of c values tie, topk 1 and the smallest topk, an encode size below the
// frame's), both ways of pooling; and
// finishStats' proof of exactness on hand-made accumulators (one picture, and full_ref's two).
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { cambi } from '../../dist/extractors/cambi/cambi.js';
import { cambiPooling, poolScale } from '../../dist/extractors/cambi/cambi-gpu.js';
import { loadNative } from '../../dist/kernels/native.js';
import { writeLumaValuesPair } from '../helpers/gpu-vs-cpu.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'vmaf-cambi-pool-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

async function run(ref, dis, backend, features) {
  const warnings = [];
  const frames = await lastValueFrom(score(ref, dis, { backend, features, noPrediction: true, threads: 2, onWarning: (m) => warnings.push(m) }).pipe(toArray()));
  return { frames, warnings };
}

function assertSame(got, want, what) {
  assert.equal(got.length, want.length, `${what}: ${got.length} frames, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    for (const [k, v] of Object.entries(want[i].features)) {
      assert.ok(Object.is(got[i].features[k], v), `${what}: frame ${i} ${k}: gpu ${got[i].features[k]} cpu ${v}`);
    }
  }
}

function writeClip(name, width, height, bitDepth, lumaOf, frames) {
  const lumas = [];
  for (let f = 0; f < frames; f++) {
    const luma = new Float64Array(width * height);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) luma[y * width + x] = lumaOf(f, x, y);
    lumas.push(luma);
  }
  return writeLumaValuesPair(tmp, name, { width, height, bitDepth }, lumas.map((luma) => [luma, luma]))[0];
}

const onHost = (warnings) => warnings.filter((w) => /host's cpu/.test(w) && /cambi/.test(w));

describe('cambi pooling on the GPU', function () {
  this.timeout(1_200_000);
  afterEach(() => (cambiPooling.forceHost = false));

  it('poolScale (the host way) is cambi.cpp\'s: the mean of the k largest, k = trunc(topk * n) clamped to [1, n]', () => {
    const c = Float32Array.from([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]);
    assert.equal(poolScale(c.slice(), 1), [...c].reduce((a, b) => a + b, 0) / 11);
    assert.equal(poolScale(c.slice(), 0.0001), 9);
    assert.equal(poolScale(c.slice(), 0.3), (9 + 6 + 5) / 3);
    assert.equal(poolScale(new Float32Array(7), 0.6), 0);
  });

  it("finishStats: exact sums give the mean; sums it cannot prove exact give NaN (the host pools); the host's means are taken as given", () => {
    const native = loadNative();
    const options = Object.fromEntries(cambi.options.map((o) => [o.name, o.default]));
    const h = native.createExtractor('cambi', options, { width: 640, height: 360, bitDepth: 8, chromaWidth: 320, chromaHeight: 180 });
    assert.equal(native.extractorStatsCount(h), 22);
    // window 11 at 640x360: the score is sum(pooled * 16, 8, 4, 2, 1) / 121.
    const f32 = (v) => BigInt(new Uint32Array(Float32Array.of(v).buffer)[0]);
    const stats = new BigUint64Array(22);
    // Scale 0: T = 0.5 and nothing above: every one of the k values is 0.5.
    stats[2] = f32(0.5);
    assert.equal(native.finishExtractor(h, stats)[0], (0.5 * 16) / 121);
    // Scale 1: T = 0 with 1000 values above it summing to 2^72 units of 2^-40 (2^32), one
    // of them an odd multiple of 2^-24: 2^56 multiples, beyond a double's 2^53.
    stats[6] = 1000n << 32n;
    stats[8] = 1n << 40n;
    stats[9] = BigInt(1024 - 126);
    assert.ok(Number.isNaN(native.finishExtractor(h, stats)[0]));
    // A total of 2^52 units (2^12) in multiples of 2^-16 (exponent + trailing zeros 134): exact.
    stats[8] = 1n << 20n;
    stats[9] = BigInt(1024 - 134);
    assert.equal(native.finishExtractor(h, stats)[0], (0.5 * 16 + (2 ** 12 / Math.trunc(0.6 * 320 * 180)) * 8) / 121);
    // A value outside the units' range: not provable.
    stats[9] |= 1n << 32n;
    assert.ok(Number.isNaN(native.finishExtractor(h, stats)[0]));
    // Pooled by the host: each scale's second accumulator is its mean.
    const given = new BigUint64Array(22);
    given[1] = 1n << 63n;
    const f64 = (v) => new BigUint64Array(Float64Array.of(v).buffer)[0];
    [0.25, 1.5, 3, 0, 7.75].forEach((v, s) => (given[2 + 4 * s + 1] = f64(v)));
    assert.equal(native.finishExtractor(h, given)[0], (0.25 * 16 + 1.5 * 8 + 3 * 4 + 0 * 2 + 7.75) / 121);
  });

  it('finishStats with full_ref: 20 accumulators per picture (distorted, then reference) give cambi, cambi_source and their clipped difference; one unprovable sum makes all three NaN', () => {
    const native = loadNative();
    const options = { ...Object.fromEntries(cambi.options.map((o) => [o.name, o.default])), full_ref: true };
    const h = native.createExtractor('cambi', options, { width: 640, height: 360, bitDepth: 8, chromaWidth: 320, chromaHeight: 180 });
    assert.equal(native.extractorStatsCount(h), 42);
    const f32 = (v) => BigInt(new Uint32Array(Float32Array.of(v).buffer)[0]);
    const stats = new BigUint64Array(42);
    // Scale 0 of each picture: every one of its k values is T.
    stats[2] = f32(0.5);
    stats[22] = f32(0.25);
    assert.deepEqual([...native.finishExtractor(h, stats)], [(0.5 * 16) / 121, (0.25 * 16) / 121, (0.5 * 16) / 121 - (0.25 * 16) / 121]);
    // The reference bands more: the difference is clipped at 0.
    stats[22] = f32(1);
    assert.deepEqual([...native.finishExtractor(h, stats)], [(0.5 * 16) / 121, 16 / 121, 0]);
    // The reference's scale 1 beyond a double's 2^53 multiples: the host pools the frame.
    stats[26] = 1000n << 32n;
    stats[28] = 1n << 40n;
    stats[29] = BigInt(1024 - 126);
    assert.ok([...native.finishExtractor(h, stats)].every(Number.isNaN));
    // Pooled by the host: each scale's second accumulator is its mean, in both pictures.
    const given = new BigUint64Array(42);
    given[1] = 1n << 63n;
    const f64 = (v) => new BigUint64Array(Float64Array.of(v).buffer)[0];
    [0.25, 1.5, 3, 0, 7.75].forEach((v, s) => (given[2 + 4 * s + 1] = f64(v)));
    [0.5, 0.5, 1, 0, 0.25].forEach((v, s) => (given[22 + 4 * s + 1] = f64(v)));
    const dis = (0.25 * 16 + 1.5 * 8 + 3 * 4 + 0 * 2 + 7.75) / 121;
    const src = (0.5 * 16 + 0.5 * 8 + 1 * 4 + 0 * 2 + 0.25) / 121;
    assert.deepEqual([...native.finishExtractor(h, given)], [dis, src, dis - src]);
  });

  it('randomized: odd sizes, flat frames, stripes of tied values, topk 1 and 0.0001; gpu == cpu, pooled on the GPU and on the host', async () => {
    let seed = 4242;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
    const kinds = ['flat', 'stripes', 'bands', 'mixed', 'steps', 'noise'];
    const features = ['cambi', 'cambi=topk=1', 'cambi=cambi_topk=0.0001', 'cambi=topk=0.37:window_size=127', 'cambi=cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17'];
    let banded = 0;
    for (const [c, kind] of kinds.entries()) {
      const width = 217 + 2 * int(0, 100);
      const height = 216 + 2 * int(0, 60) + 1;
      const bitDepth = [8, 10][c % 2];
      const max = 2 ** bitDepth - 1;
      const level = int(Math.floor(max * 0.2), Math.floor(max * 0.6));
      const period = int(3, 17);
      const lumaOf = (f, x, y) => {
        switch (kind) {
          case 'flat': // every pixel masked and equal: every c is 0
            return level + f;
          case 'stripes': // two values in vertical stripes: the same c over and over
            return level + (Math.floor(x / period) % 2);
          case 'bands': // a quantised gradient: steps of one value
            return level + Math.floor((x + y) / (period * 4));
          case 'mixed': // a flat half and a banded half
            return x < width / 2 ? level : level + Math.floor(y / period) % 3;
          case 'steps': // wide steps of two levels, the second frame shifted
            return level + 2 * (Math.floor((x + 7 * f) / 40) % 2);
          default: // noise over bands: few masked pixels
            return level + Math.floor(x / period) + (rand() < 0.3 ? int(-2, 2) : 0);
        }
      };
      const file = writeClip(`pool${c}`, width, height, bitDepth, lumaOf, 2);
      // An encode size below the frame's (odd, the samples picked by libvmaf's stepping), anti-dithered too.
      const encode = `cambi=enc_width=${Math.max(216, width - int(1, 60))}:enc_height=${height - int(1, 60)}:enc_bitdepth=${c % 3 === 0 ? 8 : 10}`;
      const what = `${kind} ${width}x${height} ${bitDepth}-bit`;
      const cpu = await run(file, file, 'cpu', [...features, encode]);
      const before = { ...cambiPooling };
      const gpu = await run(file, file, 'gpu', [...features, encode]);
      assert.deepEqual(onHost(gpu.warnings), [], `${what}: ${gpu.warnings.join('\n')}`);
      assert.equal(cambiPooling.gpu - before.gpu, 2 * (features.length + 1), `${what}: every frame pooled on the GPU`);
      assert.equal(cambiPooling.host - before.host, 0, what);
      assertSame(gpu.frames, cpu.frames, what);
      cambiPooling.forceHost = true;
      const host = await run(file, file, 'gpu', [...features, encode]);
      cambiPooling.forceHost = false;
      assertSame(host.frames, cpu.frames, `${what} (pooled on the host)`);
      if (kind === 'flat') assert.ok(cpu.frames.every((f) => f.features.cambi === 0), what);
      banded += cpu.frames.filter((f) => f.features.cambi > 0).length;
    }
    assert.ok(banded >= 4, `${banded} frames with banding`);
  });
});
