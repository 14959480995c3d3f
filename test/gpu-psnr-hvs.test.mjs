// psnr_hvs on the gpu backend (psnr_hvs.wgsl: each block's terms in integer-exact float
// arithmetic; psnr_hvs.cpp's finishStats sums them per plane in its order): every value
// equal to the cpu backend's, bit for bit, and to libvmaf 3.2.0's on carried clips (8, 10
// and 12 bits, odd sizes, 4:4:4); and on seeded random pictures of random sizes (odd
// included), depths 8/10/12 and chroma formats 4:2:0/4:2:2/4:4:4, with flat, extreme and
// noisy content. The shader is large (lavapipe compiles it in tens of seconds per run), so
// each case runs a few frames. GPU_PSNR_HVS_SEED replays a randomized run.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { goldenClip } from './helpers/golden.mjs';
import { sameAsLibvmaf } from './helpers/golden-extractor.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertGpuMatchesCpu, assertOnGpu, assertSameFrames, scoreRun, scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';

const KEYS = ['psnr_hvs_y', 'psnr_hvs_cb', 'psnr_hvs_cr', 'psnr_hvs'];
const tmp = scratchDir('vmaf-gpu-psnr-hvs-');

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, features: ['psnr_hvs'], ...options });

/** A y4m pair of `frames` random pictures: per 8x8 area flat, extreme (0 / max), a gradient or noise; dis perturbed. */
function randomPair(R, name, { width, height, bitDepth, chroma, frames }) {
  const max = 2 ** bitDepth - 1;
  const [cw, ch] = chroma === '444' ? [width, height] : chroma === '422' ? [Math.ceil(width / 2), height] : [Math.ceil(width / 2), Math.ceil(height / 2)];
  const pairs = [];
  const Samples = bitDepth > 8 ? Uint16Array : Uint8Array;
  for (let f = 0; f < frames; f++) {
    const ref = [];
    const dis = [];
    for (const [w, h] of [[width, height], [cw, ch], [cw, ch]]) {
      const r = new Samples(w * h);
      const d = new Samples(w * h);
      const kinds = Array.from({ length: Math.ceil(w / 8) * Math.ceil(h / 8) }, () => R.int(5));
      const level = R.int(max + 1);
      const noise = 1 + R.int(Math.max(1, max >> 3));
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const kind = kinds[(y >> 3) * Math.ceil(w / 8) + (x >> 3)];
          const v = kind === 0 ? level : kind === 1 ? ((x + y) & 1 ? max : 0) : kind === 2 ? Math.floor((max * (x + 2 * y)) / (w + 2 * h)) : R.int(max + 1);
          r[y * w + x] = v;
          // dis: equal (flat stays flat), a small error, or an extreme one.
          const e = R.int(4) === 0 ? 0 : R.int(20) === 0 ? R.range(-max, max) : R.range(-noise, noise);
          d[y * w + x] = Math.min(max, Math.max(0, v + e));
        }
      }
      ref.push(r);
      dis.push(d);
    }
    pairs.push([ref, dis]);
  }
  return writeFramePair(tmp, name, { width, height, bitDepth, chroma }, pairs);
}

describe('psnr_hvs on the gpu backend', function () {
  this.timeout(1800000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0, every frame run', function () {
    const cases = [
      ['src01_160x90_8bit', 3],
      ['flat_and_static_320x240', 2],
      ['src01_288x162_10bit', 2],
      ['rgbtest_301x199_444_12bit', 2],
    ];
    const totals = {};
    after(() => console.log('      gpu vs libvmaf:', Object.entries(totals).map(([k, [e, t]]) => `${k} ${e}/${t}`).join(', ')));
    for (const [name, frameCnt] of cases) {
      it(`${name} (${frameCnt} frames)`, async function () {
        const clip = goldenClip(name);
        const gold = clip.log('libvmaf-extra').frames;
        const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', frameCnt });
        const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', frameCnt });
        assertSameFrames(gpu.frames, cpu.frames, name);
        assertOnGpu(gpu.warnings, name);
        assert.equal(gpu.frames.length, frameCnt, name);
        for (const f of gpu.frames) {
          for (const k of KEYS) {
            const want = gold[f.index].metrics[k];
            // libvmaf's JSON writes an infinite value (identical frames) as null.
            assert.ok(typeof want === 'number' || want === null, `${name}: libvmaf's ${k}`);
            totals[k] ??= [0, 0];
            totals[k][1]++;
            if (sameAsLibvmaf(f.features[k], want)) totals[k][0]++;
            assert.ok(sameAsLibvmaf(f.features[k], want), `${name} frame ${f.index} ${k}: gpu ${f.features[k]}, libvmaf ${want}`);
          }
        }
      });
    }
  });

  it('randomized: seeded random pictures of random sizes, depths and chroma formats, gpu == cpu exactly', async function () {
    const R = makeRng(Number(process.env.GPU_PSNR_HVS_SEED ?? 20261124) >>> 0);
    const formats = [[8, '420'], [10, '422'], [12, '444'], [8, '444'], [12, '420'], [10, '420']];
    let values = 0;
    for (const [c, [bitDepth, chroma]] of formats.entries()) {
      // Odd and even sizes; the subsampled formats need even ones where libvmaf refuses odd.
      const even = (n) => (chroma === '444' ? n : n & ~1);
      const width = even(R.range(34, 90)); // 33x33 at least, as every extractor
      const height = chroma === '420' ? even(R.range(34, 70)) : R.range(33, 70);
      const frames = R.range(1, 2);
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${chroma}, ${frames} frames`;
      const [ref, dis] = randomPair(R, `rand${c}`, { width, height, bitDepth, chroma, frames });
      await assertGpuMatchesCpu(ref, dis, { noPrediction: true, features: ['psnr_hvs'] }, frames, what);
      values += frames * KEYS.length;
    }
    console.log(`      randomized: ${values} values equal`);
  });
});
