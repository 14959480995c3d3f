// float_ansnr and float_motion on the gpu backend: their float work in integer-exact soft
// float (lib/f32.wgsl) in the C++'s order, finished by the C++ extractors' finishStats (and
// float_motion's motion2/motion3 by its finishFrame, from the next frame's score). Every
// value equal to the cpu backend's, bit for bit, and to libvmaf 3.2.0's on every frame of
// every carried clip; and on seeded random pictures of random sizes (odd ones included),
// depths and chroma formats, with flat, extreme, still and noisy content, float_motion at
// random options too; float_motion in a ladder, with --subsample and beside the core's
// integer motion; float_motion's chroma and scale-1 terms (motion_add_uv, motion_add_scale1)
// on carried clips and random pictures of every chroma format. Nothing runs on the host.
// (Frames are 33x33 at least: the pipeline refuses smaller ones.) GPU_FLOAT_SEED replays a randomized run. XDG_RUNTIME_DIR must be set for Mesa's lavapipe.
import assert from 'node:assert/strict';
import { carriedClipNames, goldenClip } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertGpuMatchesCpu, assertOnGpu, assertSameFrames, ladderRun, scoreRun, scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';

const tmp = scratchDir('vmaf-gpu-float-');
const SEED = Number(process.env.GPU_FLOAT_SEED ?? 20261124) >>> 0;

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

const CHROMA = { '420': [2, 2], '422': [2, 1], '444': [1, 1] };

/**
 * A seeded y4m pair: `frames` frames of a textured gradient with flat blocks (equal in both),
 * full-range extremes (0 and max stripes), and noise and outliers in the distorted; chroma
 * planes random.
 */
function randomPair(R, name, { width, height, bitDepth, chroma, frames }) {
  const max = 2 ** bitDepth - 1;
  const [sx, sy] = CHROMA[chroma];
  const cw = Math.ceil(width / sx);
  const ch = Math.ceil(height / sy);
  const per = width * height + 2 * cw * ch;
  const pairs = [];
  const fx = R.float() * 3;
  const fy = R.float() * 3;
  for (let f = 0; f < frames; f++) {
    const ref = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    const dis = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    const still = R.int(3) === 0; // sometimes a frame equal to the previous one (motion 0)
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = y * width + x;
        const flat = ((x >> 3) + (y >> 3)) % 5 === 0;
        const stripe = (x + y) % 29 === 0 ? ((x >> 1) & 1) * max : -1;
        const shift = still ? 0 : f * 3;
        const v = flat ? Math.floor(max / 3) : stripe >= 0 ? stripe : Math.min(max, Math.floor(max * (0.5 + 0.45 * Math.sin(((x + shift) * fx) / 7 + (y * fy) / 5))) + R.int(Math.max(2, max >> 5)));
        ref[i] = v;
        dis[i] = flat ? v : R.int(23) === 0 ? R.int(max + 1) : Math.min(max, Math.max(0, v + R.range(-(max >> 5) - 1, (max >> 5) + 1)));
      }
    }
    for (let i = width * height; i < per; i++) {
      ref[i] = R.int(max + 1);
      dis[i] = R.int(max + 1);
    }
    pairs.push([ref, dis]);
  }
  return writeFramePair(tmp, name, { width, height, bitDepth, chroma }, pairs);
}

/**
 * The golden parity and randomized tests of one extractor: `feature` its --feature argument,
 * `keys` its log keys in libvmaf-extra's naming (`logKey` maps a feature key to it).
 */
function extractorTests({ feature, keys, logKey = (k) => k, cases = 8, minSide = 33, options = [] }) {
  describe(`${feature}`, function () {
    describe('golden parity: gpu == cpu == libvmaf 3.2.0, every frame of every carried clip', function () {
      const totals = {};
      after(() => console.log(`      ${feature} gpu vs libvmaf:`, Object.entries(totals).map(([k, [e, t, d]]) => `${k} ${e}/${t} (max |diff| ${d})`).join(', ')));
      for (const name of carriedClipNames) {
        it(name, async function () {
          const clip = goldenClip(name);
          const gold = clip.log('libvmaf-extra').frames;
          const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features: [feature] });
          const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features: [feature] });
          assertSameFrames(gpu.frames, cpu.frames, name);
          assertOnGpu(gpu.warnings, name);
          assert.equal(gpu.frames.length, gold.length, `${name}: every frame`);
          for (const f of gpu.frames) {
            for (const k of keys) {
              const want = gold[f.index].metrics[logKey(k)];
              assert.equal(typeof want, 'number', `${name}: libvmaf's ${logKey(k)}`);
              const got = f.features[k];
              totals[k] ??= [0, 0, 0];
              totals[k][1]++;
              if (Object.is(got, want)) totals[k][0]++;
              else totals[k][2] = Math.max(totals[k][2], Math.abs(got - want));
              assert.ok(Object.is(got, want), `${name} frame ${f.index} ${k}: gpu ${got}, libvmaf ${want}`);
            }
          }
        });
      }
    });

    it(`randomized: ${cases} seeded pairs of random sizes, depths and chroma formats, gpu == cpu exactly`, async function () {
      const R = makeRng((SEED ^ feature.length * 7919) >>> 0);
      let compared = 0;
      for (let c = 0; c < cases; c++) {
        const width = c === 0 ? minSide : R.range(minSide, 97);
        const height = c === 1 ? minSide : R.range(minSide, 71);
        const bitDepth = [8, 10, 12, 16][c % 4];
        const chroma = ['420', '422', '444'][R.int(3)];
        const frames = R.range(2, 4);
        const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${chroma}, ${frames} frames (seed ${SEED})`;
        const [ref, dis] = randomPair(R, `${feature}-${c}`, { width, height, bitDepth, chroma, frames });
        const args = [feature, ...options.map((o) => o(R))];
        for (const arg of args) {
          const k = await assertGpuMatchesCpu(ref, dis, { noPrediction: true, features: [arg] }, frames, `${what} ${arg}`);
          compared += frames * Object.keys(k[0].features).length;
        }
      }
      console.log(`      ${feature}: ${compared} randomized values, gpu == cpu`);
    });
  });
}

describe('float extractors on the gpu backend', function () {
  this.timeout(1800000);
  extractorTests({ feature: 'float_ansnr', keys: ['float_ansnr', 'float_anpsnr'] });

  const motionOptions = (R) => {
    if (R.int(5) === 0) return `float_motion=motion_force_zero=true:debug=${R.bool()}`;
    const opts = [`motion_filter_size=${R.pick([1, 3, 5, 0, 7])}`, `debug=${R.bool()}`];
    if (R.bool()) opts.push(`motion_fps_weight=${R.pick([0.5, 2, 4.75])}`);
    if (R.bool()) opts.push(`motion_blend_factor=${R.pick([0, 0.25, 0.8])}:motion_blend_offset=${R.pick([0, 1, 3.5])}`);
    if (R.bool()) opts.push(`motion_max_val=${R.pick([0.5, 2, 10000])}`);
    return `float_motion=${opts.join(':')}`;
  };
  extractorTests({ feature: 'float_motion', keys: ['motion2', 'motion', 'motion3'], options: [motionOptions, motionOptions] });

  describe('float_motion: ladders, --subsample, the core beside it, what stays on the host', function () {
    it('a ladder (renditions of different lengths), with --subsample, gives each rendition the cpu backend\'s values', async function () {
      const clip = goldenClip('src01_160x90_8bit');
      const features = ['float_motion', 'float_motion=motion_filter_size=3:debug=false', 'float_ansnr'];
      const ladder = (backend, subsample) =>
        ladderRun(clip.ref, [{ input: clip.dis, name: 'dis' }, { input: clip.ref, name: 'same', frameSkip: 41 }], { backend, features, noPrediction: true, frameCnt: 16, subsample });
      for (const subsample of [1, 3]) {
        const gpu = await ladder('gpu', subsample);
        const cpu = await ladder('cpu', subsample);
        for (const name of ['dis', 'same']) {
          assert.ok(cpu.by[name].length > 1, `${name}: ${cpu.by[name].length} frames`);
          assertSameFrames(gpu.by[name], cpu.by[name], `ladder ${name} subsample ${subsample}`);
        }
        assertOnGpu(gpu.warnings, `ladder subsample ${subsample}`);
        if (subsample === 3) assert.deepEqual(gpu.by.dis.map((f) => f.index), [0, 3, 6, 9, 12, 15]);
      }
    });

    it('a float model (vmaf_float_v0.6.1: float_motion, float_vif and float_adm all on the gpu) scores as the cpu backend and libvmaf', async function () {
      const clip = goldenClip('src01_288x162_10bit');
      const gold = clip.log('libvmaf-extra').frames;
      const options = { noPrediction: false, models: ['version=vmaf_float_v0.6.1:name=vmaf_float'] };
      const gpu = await run(clip.ref, clip.dis, { ...options, backend: 'gpu' });
      const cpu = await run(clip.ref, clip.dis, { ...options, backend: 'cpu' });
      assert.equal(gpu.frames.length, gold.length);
      gpu.frames.forEach((f, i) => {
        assert.ok(Object.is(f.scores.vmaf_float, cpu.frames[i].scores.vmaf_float), `frame ${i}: gpu ${f.scores.vmaf_float} cpu ${cpu.frames[i].scores.vmaf_float}`);
        for (const k of ['motion2', 'motion3']) assert.ok(Object.is(f.features[k], gold[i].metrics[k]), `frame ${i} ${k}: gpu ${f.features[k]} libvmaf ${gold[i].metrics[k]}`);
        assert.ok(Math.abs(f.scores.vmaf_float - gold[i].metrics.vmaf_float) < 1e-9, `frame ${i}: vmaf_float ${f.scores.vmaf_float}, libvmaf ${gold[i].metrics.vmaf_float}`);
      });
      // Every extractor the model reads has a gpu kernel now: nothing runs on the host.
      assert.deepEqual(gpu.warnings.filter((w) => /host's cpu/.test(w)), [], gpu.warnings.join('\n'));
    });

    it('beside the core (VMAF v0.6.1, its integer motion) with --subsample: gpu == cpu; motion_add_uv and motion_add_scale1 on the gpu too', async function () {
      const clip = goldenClip('testsrc_640x360_x264_12f');
      const options = { features: ['float_motion=motion_fps_weight=2', 'float_ansnr'], noPrediction: false, models: ['version=vmaf_v0.6.1:name=vmaf'], frameCnt: 6, subsample: 2 };
      const gpu = await run(clip.ref, clip.dis, { ...options, backend: 'gpu' });
      const cpu = await run(clip.ref, clip.dis, { ...options, backend: 'cpu' });
      assertSameFrames(gpu.frames, cpu.frames, 'with the core');
      assert.ok('integer_motion2' in gpu.frames[0].features && 'motion2_mfw_2' in gpu.frames[0].features, Object.keys(gpu.frames[0].features).join(' '));
      assertOnGpu(gpu.warnings, 'with the core');

      const extra = { features: ['float_motion=motion_add_uv=true', 'float_motion=motion_add_scale1=true', 'float_motion=motion_add_uv=true:motion_add_scale1=true:debug=false', 'float_motion'], frameCnt: 4 };
      const g = await run(clip.ref, clip.dis, { ...extra, backend: 'gpu' });
      const c = await run(clip.ref, clip.dis, { ...extra, backend: 'cpu' });
      assertSameFrames(g.frames, c.frames, 'chroma and scale 1');
      assertOnGpu(g.warnings, 'chroma and scale 1');
      // The options change the scores (they are not the default instance's again).
      const keys = Object.keys(c.frames[1].features).filter((k) => /_(mau|mdc)/.test(k));
      assert.equal(keys.length, 8, keys.join(' '));
      for (const k of keys) assert.notEqual(c.frames[1].features[k], c.frames[1].features[k.replace(/_(mau|mdc)/g, '')], k);
    });

    // libvmaf-motion-options (fixtures/golden/README.md): libvmaf 3.2.0's float_motion under
    // motion_add_uv, motion_add_scale1, both, and both at filter size 3: 4:2:0 8-bit, 4:2:0
    // 10-bit with odd chroma height (240x135, its scale 1 68 rows), 4:4:4 12-bit odd (301x199).
    for (const name of ['src01_160x90_8bit', 'gradients_480x270_10bit', 'rgbtest_301x199_444_12bit']) {
      it(`motion_add_uv, motion_add_scale1 and both, ${name}: gpu == cpu == libvmaf 3.2.0, every frame, on the gpu`, async function () {
        const clip = goldenClip(name);
        const { runs } = clip.log('libvmaf-motion-options');
        const features = runs.map((r) => r.feature);
        const gpu = await run(clip.ref, clip.dis, { features, backend: 'gpu' });
        const cpu = await run(clip.ref, clip.dis, { features, backend: 'cpu' });
        assertSameFrames(gpu.frames, cpu.frames, name);
        assertOnGpu(gpu.warnings, name);
        let compared = 0;
        for (const r of runs) {
          assert.equal(gpu.frames.length, r.frames.length, `${name} ${r.feature}: every frame`);
          r.frames.forEach((want, i) => {
            for (const [k, v] of Object.entries(want)) {
              assert.ok(Object.is(gpu.frames[i].features[k], v), `${name} frame ${i} ${k}: gpu ${gpu.frames[i].features[k]}, libvmaf ${v}`);
              compared++;
            }
          });
        }
        console.log(`      ${name}: ${compared} values, gpu == cpu == libvmaf`);
      });
    }

    // motion_add_uv (Cb and Cr at their own sizes: 4:2:0, 4:2:2, 4:4:4, odd luma sizes giving
    // ceil(w / 2) chroma), motion_add_scale1 (the blurred planes resampled to half size, odd
    // sizes giving non-integer ratios) and both, at every depth and with each filter size.
    it('motion_add_uv, motion_add_scale1 and both on random pictures of odd sizes, every depth and chroma format: gpu == cpu exactly, on the gpu', async function () {
      const R = makeRng((SEED ^ 0x7a5c1) >>> 0);
      const formats = [[33, 35, 8, '420'], [47, 33, 10, '422'], [34, 41, 12, '444'], [41, 37, 16, '420'], [64, 33, 8, '422']];
      let compared = 0;
      for (const [c, [width, height, bitDepth, chroma]] of formats.entries()) {
        const what = `${width}x${height} ${bitDepth}-bit ${chroma}`;
        const [ref, dis] = randomPair(R, `motion-extra-${c}`, { width, height, bitDepth, chroma, frames: 3 });
        const size = R.pick([1, 3, 5]);
        const features = ['motion_add_uv=true', 'motion_add_scale1=true', 'motion_add_uv=true:motion_add_scale1=true'].map((o) => `float_motion=${o}:motion_filter_size=${size}:debug=${R.bool()}`);
        const k = await assertGpuMatchesCpu(ref, dis, { noPrediction: true, features }, 3, `${what} ${features.join(' ')}`);
        compared += 3 * Object.keys(k[0].features).length;
      }
      console.log(`      float_motion motion_add_uv / motion_add_scale1: ${compared} randomized values, gpu == cpu`);
    });
  });

  // The serial sums load their terms through workgroup tiles (serial-rows.wgsl: 16 rows by 64
  // columns; the totals 1024 words at a time): sizes on both sides of the tile edges, and a
  // tall frame whose row sums take more than one chunk (float_motion over 1024 rows, float_ansnr
  // over 512), summed in the same order as on the cpu.
  it('serial sums at the tiles\' edges (widths 64, 65, 129; heights 48, 49; 1100 rows): gpu == cpu exactly, every float extractor with a row pass', async function () {
    const R = makeRng((SEED ^ 0x5e71a1) >>> 0);
    const rowPasses = ['float_motion', 'float_ansnr', 'float_vif', 'float_adm'];
    let compared = 0;
    // The tall frame for the totals' chunks only (float_motion and float_ansnr have a total pass).
    for (const [width, height, features] of [[64, 48, rowPasses], [65, 49, rowPasses], [129, 33, rowPasses], [40, 1100, rowPasses.slice(0, 2)]]) {
      const what = `${width}x${height}`;
      const [ref, dis] = randomPair(R, `tiles-${what}`, { width, height, bitDepth: 8, chroma: '420', frames: 2 });
      const k = await assertGpuMatchesCpu(ref, dis, { noPrediction: true, features }, 2, what);
      compared += 2 * Object.keys(k[0].features).length;
    }
    console.log(`      serial sums at the tiles' edges: ${compared} values, gpu == cpu`);
  });
});
