// speed_chroma on the gpu backend: the decimated planes (antialias Gaussian, decimation by 16,
// minus the local mean) in integer-exact soft float on the GPU, the per-block statistics on
// the host by the same C++ the cpu backend runs. Every value equal to the cpu backend's, bit
// for bit, and to libvmaf 3.2.0's on the golden clips that have SpEED values, at defaults and
// at the v1 models' options: every frame of the carried ones (the 300-frame ladder's first
// 24; not 0 on two of them: the smaller ones have one 5x5 block, a singular covariance,
// scores 0), the first 8 of ../shared/golden's (where it exists; none 0); on seeded random
// pairs of random sizes (odd ones and the smallest SpEED takes included), depths, chroma
// formats, contents (flat, noisy, extreme) and options (nearest and bilinear prescales); the v1 model with nothing on the host; a
// ladder with --subsample; a rescaling speed_prescale on the host, named. GPU_SPEED_SEED
// replays a randomized run. XDG_RUNTIME_DIR must be set for Mesa's lavapipe.
import assert from 'node:assert/strict';
import { goldenClip, goldenClips } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertGpuMatchesCpu, assertOnGpu, assertSameFrames, ladderRun, onHost, scoreRun, scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';

const tmp = scratchDir('vmaf-gpu-speed-');
const SEED = Number(process.env.GPU_SPEED_SEED ?? 20261124) >>> 0;

const V1 = 'speed_kernelscale=1:speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45';
const V1_SUFFIX = 'mxv_45_nnf_0.1_snn_0.19_wvm_5';
// The --feature arguments the golden logs have values for, and their keys' suffixes: the
// defaults, VMAF v1's options, and those with the bilinear prescales of its phone and 4K models.
const GOLDEN_CASES = [
  ['speed_chroma', ''],
  [`speed_chroma=${V1}`, V1_SUFFIX],
  [`speed_chroma=${V1}:speed_prescale=0.6:speed_prescale_method=bilinear`, 'mxv_45_nnf_0.1_ps_0.6_psm_bilinear_snn_0.19_wvm_5'],
  [`speed_chroma=${V1}:speed_prescale=0.5:speed_prescale_method=bilinear`, 'mxv_45_nnf_0.1_ps_0.5_psm_bilinear_snn_0.19_wvm_5'],
];
const keysOf = (suffix) => ['u', 'v', 'uv'].map((c) => `speed_chroma_${c}${suffix ? `_${suffix}` : ''}`);

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

const SUBSAMPLING = { '420': [2, 2], '422': [2, 1], '444': [1, 1] };

/**
 * A seeded y4m pair; the chroma planes (what speed_chroma reads) per `content`: 'flat' (one
 * value, the distorted's maybe another), 'extreme' (random cells of 0 and max), 'noisy'
 * (a textured gradient, the distorted with noise and outliers); luma a ramp.
 */
function randomPair(R, name, { width, height, bitDepth, chroma, frames, content }) {
  const max = 2 ** bitDepth - 1;
  const [sx, sy] = SUBSAMPLING[chroma];
  const cw = Math.ceil(width / sx);
  const ch = Math.ceil(height / sy);
  const luma = width * height;
  const per = luma + 2 * cw * ch;
  const pairs = [];
  for (let f = 0; f < frames; f++) {
    const ref = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    const dis = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    for (let i = 0; i < luma; i++) ref[i] = dis[i] = (i * 7 + f) % (max + 1);
    const fx = 1 + R.float() * 3;
    const fy = 1 + R.float() * 3;
    const flatRef = R.int(max + 1);
    const flatDis = R.bool() ? flatRef : R.int(max + 1);
    const cellsAcross = Math.ceil(cw / 4);
    const cells = [0, 1].map(() => Array.from({ length: cellsAcross * Math.ceil(ch / 4) }, () => R.int(2) | (R.int(6) === 0 ? 2 : 0)));
    for (let p = 0; p < 2; p++) {
      const base = luma + p * cw * ch;
      for (let y = 0; y < ch; y++) {
        for (let x = 0; x < cw; x++) {
          const i = base + y * cw + x;
          if (content === 'flat') {
            ref[i] = flatRef;
            dis[i] = flatDis;
          } else if (content === 'extreme') {
            // Random cells of 0 and max (a regular pattern would make every covariance
            // singular); the distorted's with some cells inverted and single-sample outliers.
            const cell = cells[p][(y >> 2) * cellsAcross + (x >> 2)];
            ref[i] = (cell & 1) * max;
            dis[i] = R.int(41) === 0 ? R.int(2) * max : cell & 2 ? max - ref[i] : ref[i];
          } else {
            const v = Math.min(max, Math.floor(max * (0.5 + 0.45 * Math.sin((x * fx) / 7 + (y * fy) / 5 + f))) + R.int(Math.max(2, max >> 4)));
            ref[i] = v;
            dis[i] = R.int(19) === 0 ? R.int(max + 1) : Math.min(max, Math.max(0, v + R.range(-(max >> 4) - 1, (max >> 4) + 1)));
          }
        }
      }
    }
    pairs.push([ref, dis]);
  }
  return writeFramePair(tmp, name, { width, height, bitDepth, chroma }, pairs);
}

describe('speed_chroma on the gpu backend', function () {
  this.timeout(1800000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0 on the golden clips with SpEED values', function () {
    const totals = {};
    after(() => console.log('      speed_chroma gpu vs libvmaf:', Object.entries(totals).map(([k, [e, t]]) => `${k} ${e}/${t}`).join(', ')));
    for (const clip of goldenClips({ shared: true })) {
      const { name } = clip;
      for (const [feature, suffix] of GOLDEN_CASES) {
        const keys = keysOf(suffix);
        const gold = clip.log('libvmaf-extra').frames;
        // Clips where libvmaf refused SpEED (too small, odd 4:2:0; both backends refuse them
        // too: test/extractors/speed.test.mjs) have no values to compare.
        if (!(keys[2] in gold[0].metrics)) continue;
        // ../shared/golden's clips: the v1 options (the defaults take the same kernel path).
        if (clip.origin === 'shared' && suffix === '') continue;
        // The 300-frame ladder: its first 24 frames; the larger clips of ../shared/golden
        // (where it exists): their first 8.
        const frameCnt = Math.min(gold.length, clip.origin === 'shared' ? 8 : 24);
        it(`${name}${clip.origin === 'shared' ? ' (shared)' : ''}: ${suffix || 'defaults'}, ${frameCnt} frames`, async function () {
          const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features: [feature], frameCnt });
          const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features: [feature], frameCnt });
          assertSameFrames(gpu.frames, cpu.frames, name);
          assertOnGpu(gpu.warnings, name);
          assert.equal(gpu.frames.length, frameCnt);
          for (const f of gpu.frames) {
            for (const k of keys) {
              const want = gold[f.index].metrics[k];
              assert.equal(typeof want, 'number', `${name}: libvmaf's ${k}`);
              const t = (totals[k] ??= [0, 0]);
              t[1]++;
              if (Object.is(f.features[k], want)) t[0]++;
              assert.ok(Object.is(f.features[k], want), `${name} frame ${f.index} ${k}: gpu ${f.features[k]}, libvmaf ${want}`);
            }
          }
        });
      }
    }
  });

  it('randomized: seeded pairs of random sizes (odd, smallest), depths, chroma formats and contents, gpu == cpu exactly', async function () {
    const R = makeRng(SEED);
    let compared = 0;
    const contents = ['noisy', 'flat', 'extreme'];
    const cases = 9;
    let nonZero = 0;
    for (let c = 0; c < cases; c++) {
      const chroma = ['420', '422', '444'][c % 3];
      const [sx, sy] = SUBSAMPLING[chroma];
      // SpEED needs 80 chroma samples a side (one 5x5 block after decimating by 16): the first
      // three cases are that small (one block: a singular covariance, scores 0); the others
      // have chroma sides of 160 and more (2 x 2 blocks and more: scores that are not 0).
      // 4:2:0 and 4:2:2 widths (and 4:2:0 heights) even: odd subsampled sides are refused.
      // Cases 4, 6, 7: sides a multiple of 16 and the widest antialias filter (kernel scale
      // 360/97: 35 taps), whose last kept row and column read past the edge (mirrored).
      const edge = c === 4 || c === 6 || c === 7;
      const side = (s) => s * (c < 3 ? 80 : edge ? 16 * R.range(10, 15) : R.range(160, 250));
      const width = side(sx);
      const height = side(sy);
      const bitDepth = [8, 10, 12][R.int(3)];
      const content = contents[(c + Math.floor(c / 3)) % 3]; // each format gets each content
      const frames = 2;
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${chroma} ${content} (seed ${SEED})`;
      const [ref, dis] = randomPair(R, `speed-${c}`, { width, height, bitDepth, chroma, frames, content });
      const options = edge ? `speed_kernelscale=3.71134:speed_weight_var_mode=${R.int(7)}` : R.bool() ? V1 : `speed_weight_var_mode=${R.int(7)}:speed_kernelscale=${R.pick([1, 0.5, 1.5, 2, 3.71134])}:speed_sigma_nn=${R.pick([0.29, 0.5])}`;
      // A prescale (nearest or bilinear: on the gpu) in most cases: down where the planes are
      // large enough, up anywhere (bilinear then reads mirrored samples before the first).
      const prescale = R.int(4) === 0 ? '' : `:speed_prescale=${R.pick(c < 3 ? [1.5, 2] : [0.5, 0.6, 0.75, 1.5])}:speed_prescale_method=${R.pick(['nearest', 'bilinear', 'bilinear'])}`;
      for (const arg of ['speed_chroma', `speed_chroma=${options}${prescale}`]) {
        const k = await assertGpuMatchesCpu(ref, dis, { noPrediction: true, features: [arg] }, frames, `${what} ${arg}`);
        compared += frames * Object.keys(k[0].features).length;
        nonZero += k.flatMap((f) => Object.values(f.features)).filter((v) => v !== 0).length;
      }
    }
    console.log(`      speed_chroma: ${compared} randomized values (${nonZero} not 0), gpu == cpu`);
    assert.ok(nonZero >= compared / 4, `${nonZero} of ${compared} values not 0`);
  });

  // v1 (3d0h: no prescale) and its phone model (5d0h: the bilinear prescale 0.6), on clips
  // whose speed_chroma is not 0 there (on smaller ones one 5x5 block: 0).
  for (const [version, name, clipName] of [['vmaf_v1.0.16_3d0h', 'vmaf_v1', 'testsrc_640x360_x264_12f'], ['vmaf_v1.0.16_5d0h', 'vmaf_v1_phone', 'hd_1920x1080_x264_2f']]) {
    it(`-m version=${version}: nothing on the host, scores equal to the cpu backend's and libvmaf's (${clipName})`, async function () {
      const clip = goldenClip(clipName);
      const options = { models: [`version=${version}:name=${name}`] };
      const gpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'gpu' });
      const cpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'cpu' });
      assertSameFrames(gpu.frames, cpu.frames, `${name} features`);
      assertSameFrames(gpu.frames, cpu.frames, `${name} scores`, { field: 'scores' });
      assert.deepEqual(onHost(gpu.warnings), [], gpu.warnings.join('\n'));
      const gold = clip.log('libvmaf-extra').frames;
      assert.equal(gpu.frames.length, gold.length);
      const speed = Object.keys(gpu.frames[0].features).find((k) => k.startsWith('speed_chroma_uv'));
      assert.ok(gpu.frames.every((f) => f.features[speed] > 0), speed);
      for (const f of gpu.frames) assert.ok(Object.is(f.scores[name], gold[f.index].metrics[name]), `frame ${f.index}: gpu ${f.scores[name]}, libvmaf ${gold[f.index].metrics[name]}`);
    });
  }

  it('a ladder (renditions of different lengths) with --subsample: each rendition the cpu backend\'s values', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const features = ['speed_chroma', `speed_chroma=${V1}`];
    const ladder = (backend) =>
      ladderRun(clip.ref, [{ input: clip.dis, name: 'dis' }, { input: clip.ref, name: 'same', frameSkip: 5 }], { backend, features, noPrediction: true, frameCnt: 8, subsample: 2 });
    const gpu = await ladder('gpu');
    const cpu = await ladder('cpu');
    for (const name of ['dis', 'same']) {
      assert.ok(cpu.by[name].length > 1, `${name}: ${cpu.by[name].length} frames`);
      assertSameFrames(gpu.by[name], cpu.by[name], `ladder ${name}`, { index: true });
    }
    assert.ok(gpu.by.dis.every((f) => f.features.speed_chroma_uv > 0));
    assertOnGpu(gpu.warnings, 'ladder');
  });

  it('a bicubic or lanczos4 speed_prescale that resamples runs on the host, named, with the cpu backend\'s values', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const features = [`speed_chroma=${V1}:speed_prescale=0.6:speed_prescale_method=bicubic`, 'speed_chroma=speed_prescale=1.25:speed_prescale_method=lanczos4', 'speed_chroma'];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 3 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 3 });
    assertSameFrames(gpu.frames, cpu.frames, 'prescale');
    const host = onHost(gpu.warnings);
    assert.equal(host.length, 1, gpu.warnings.join('\n'));
    assert.match(host[0], /speed_chroma/);
  });
});
