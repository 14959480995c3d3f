// speed_temporal on the gpu backend: the decimated planes of the two luma frame differences
// (previous reference minus this one, previous distorted minus this one, or with
// speed_use_ref_diff minus this reference) on the GPU, by the decimation speed_chroma uses, the
// per-block statistics on the host by the same C++ the cpu backend runs; the previous
// distorted picture from the backend's per-rendition history (GpuImplementation.previousDis).
// Every value equal to the cpu backend's, bit for bit, and to libvmaf 3.2.0's on the golden
// clips (the carried ones' first 6 frames, ../shared/golden's others' first 3 where that
// folder exists: odd sizes, 8, 10 and 12 bits, 4:4:4); with --subsample (temporal extractors
// run on every frame: a scored frame's previous is the frame before it, scored or not);
// speed_use_ref_diff (libvmaf's values from test/extractors/speed.test.mjs); a ladder of two
// renditions of different lengths with --subsample; seeded pairs of odd sizes at 8 and 10 bits
// with nearest and bilinear prescales; nothing on the host, except a bicubic prescale that
// resamples (named). And the staging pool's distorted history, only where asked for.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe.
import assert from 'node:assert/strict';
import { goldenClip, goldenClips } from './helpers/golden.mjs';
import { makeRng } from './helpers/gpu.mjs';
import { assertOnGpu, assertSameFrames, ladderRun, onHost, scoreRun, scratchDir, writeLumaPair } from './helpers/gpu-vs-cpu.mjs';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { StagingPool } from '../dist/pool/staging-ring.js';

const tmp = scratchDir('vmaf-gpu-speed-temporal-');
const SEED = Number(process.env.GPU_SPEED_SEED ?? 20261125) >>> 0;
const KEY = 'speed_temporal';

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options });

/** gpu and cpu runs of the same options: equal frames, nothing on the host; the gpu's frames. */
async function gpuEqualsCpu(ref, dis, options, what) {
  const gpu = await run(ref, dis, { ...options, backend: 'gpu' });
  const cpu = await run(ref, dis, { ...options, backend: 'cpu' });
  assertSameFrames(gpu.frames, cpu.frames, what, { index: true });
  assertOnGpu(gpu.warnings, what);
  return gpu.frames;
}

describe('speed_temporal on the gpu backend', function () {
  this.timeout(1800000);

  describe('golden parity: gpu == cpu == libvmaf 3.2.0', function () {
    let equal = 0;
    let total = 0;
    let nonZero = 0;
    after(() => console.log(`      speed_temporal gpu vs libvmaf: ${equal}/${total} equal (${nonZero} not 0)`));
    for (const clip of goldenClips({ shared: true })) {
      const { name } = clip;
      const frameCnt = clip.origin === 'shared' ? 3 : 6;
      it(`${name}${clip.origin === 'shared' ? ' (shared)' : ''}: ${frameCnt} frames`, async function () {
        const gold = clip.log('libvmaf-extra').frames;
        assert.equal(typeof gold[0].metrics[KEY], 'number', `${name}: libvmaf's ${KEY}`);
        const frames = await gpuEqualsCpu(clip.ref, clip.dis, { features: [KEY], frameCnt }, name);
        assert.equal(frames.length, Math.min(frameCnt, gold.length));
        for (const f of frames) {
          const want = gold[f.index].metrics[KEY];
          total++;
          if (Object.is(f.features[KEY], want)) equal++;
          if (want !== 0) nonZero++;
          assert.ok(Object.is(f.features[KEY], want), `${name} frame ${f.index}: gpu ${f.features[KEY]}, libvmaf ${want}`);
        }
      });
    }
  });

  it('--subsample 3: the scored frames\' values are libvmaf\'s (their previous frame unscored)', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const gold = clip.log('libvmaf-extra').frames;
    const frames = await gpuEqualsCpu(clip.ref, clip.dis, { features: [KEY], frameCnt: 8, subsample: 3 }, 'subsample');
    assert.deepEqual(frames.map((f) => f.index), [0, 3, 6]);
    for (const f of frames) assert.ok(Object.is(f.features[KEY], gold[f.index].metrics[KEY]), `frame ${f.index}: gpu ${f.features[KEY]}, libvmaf ${gold[f.index].metrics[KEY]}`);
    assert.ok(frames.slice(1).every((f) => f.features[KEY] > 0));
  });

  it('speed_use_ref_diff: libvmaf\'s values (previous distorted minus this reference)', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const frames = await gpuEqualsCpu(clip.ref, clip.dis, { features: ['speed_temporal=speed_use_ref_diff=true', KEY], frameCnt: 3 }, 'use_ref_diff');
    // libvmaf 3.2.0's (test/extractors/speed.test.mjs), and its default speed_temporal beside it.
    assert.deepEqual(frames.map((f) => f.features.speed_temporal_urd), [0, 27.364652633666992, 26.658512115478516]);
    const gold = clip.log('libvmaf-extra').frames;
    assert.deepEqual(frames.map((f) => f.features[KEY]), [0, 1, 2].map((i) => gold[i].metrics[KEY]));
  });

  it('a ladder (renditions of different lengths) with --subsample: each rendition the cpu backend\'s values', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const features = [KEY, 'speed_temporal=speed_use_ref_diff=true'];
    const renditions = [{ input: clip.dis, name: 'dis' }, { input: clip.ref, name: 'same', frameSkip: 4 }];
    const ladder = (backend) => ladderRun(clip.ref, renditions, { backend, features, noPrediction: true, frameCnt: 9, subsample: 2 });
    const gpu = await ladder('gpu');
    const cpu = await ladder('cpu');
    for (const name of ['dis', 'same']) {
      assert.ok(cpu.by[name].length > 1, `${name}: ${cpu.by[name].length} frames`);
      assertSameFrames(gpu.by[name], cpu.by[name], `ladder ${name}`, { index: true });
    }
    assert.ok(gpu.by.dis.length > gpu.by.same.length, 'the renditions end apart');
    const gold = clip.log('libvmaf-extra').frames;
    for (const f of gpu.by.dis) assert.ok(Object.is(f.features[KEY], gold[f.index].metrics[KEY]), `dis frame ${f.index}`);
    // The second rendition is the reference shifted by 4 frames: its values are its own.
    assert.ok(gpu.by.same.some((f) => f.features[KEY] !== gpu.by.dis.find((d) => d.index === f.index)?.features[KEY]));
    assertOnGpu(gpu.warnings, 'ladder');
  });

  it('seeded pairs of odd sizes at 8 and 10 bits, with nearest and bilinear prescales: gpu == cpu exactly', async function () {
    const R = makeRng(SEED);
    // Sides from which the (prescaled) luma keeps 2 x 2 blocks or more after decimating by 16.
    const cases = [
      { width: 171, height: 163, bitDepth: 8, options: '' },
      { width: 133, height: 121, bitDepth: 10, options: ':speed_prescale=1.5:speed_prescale_method=bilinear' },
      { width: 181, height: 165, bitDepth: 8, options: ':speed_prescale=1.25:speed_prescale_method=nearest:speed_use_ref_diff=true' },
      { width: 209, height: 177, bitDepth: 10, options: ':speed_kernelscale=0.5:speed_sigma_nn=0.5:speed_nn_floor=0.1' },
    ];
    let compared = 0;
    let nonZero = 0;
    for (const [c, { width, height, bitDepth, options }] of cases.entries()) {
      const max = 2 ** bitDepth - 1;
      const fx = 1 + R.float() * 3;
      const fy = 1 + R.float() * 3;
      // A texture moving from frame to frame, the distorted with noise and outliers.
      const [ref, dis] = writeLumaPair(tmp, `temporal-${c}`, { width, height, bitDepth }, 3, (r, d, f) => {
        for (let y = 0; y < height; y++) {
          for (let x = 0; x < width; x++) {
            const i = y * width + x;
            const v = Math.min(max, Math.floor(max * (0.5 + 0.45 * Math.sin(((x + 3 * f) * fx) / 7 + ((y + f) * fy) / 5))) + R.int(Math.max(2, max >> 4)));
            r[i] = v;
            d[i] = R.int(23) === 0 ? R.int(max + 1) : Math.min(max, Math.max(0, v + R.range(-(max >> 4) - 1, (max >> 4) + 1)));
          }
        }
      });
      const what = `${width}x${height} ${bitDepth}-bit${options} (seed ${SEED})`;
      const frames = await gpuEqualsCpu(ref, dis, { features: [`speed_temporal=speed_max_val=1000${options}`] }, what);
      assert.equal(frames.length, 3, what);
      const values = frames.map((f) => Object.values(f.features)[0]);
      assert.equal(values[0], 0, `${what}: the first frame`);
      compared += values.length;
      nonZero += values.filter((v) => v !== 0).length;
    }
    console.log(`      speed_temporal: ${compared} seeded values (${nonZero} not 0), gpu == cpu`);
    assert.equal(nonZero, 2 * cases.length, 'every frame after the first not 0');
  });

  it('a bicubic speed_prescale that resamples runs on the host, named, with the cpu backend\'s values', async function () {
    const clip = goldenClip('testsrc_640x360_x264_12f');
    const features = ['speed_temporal=speed_prescale=0.75:speed_prescale_method=bicubic', KEY];
    const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features, frameCnt: 3 });
    const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features, frameCnt: 3 });
    assertSameFrames(gpu.frames, cpu.frames, 'prescale');
    const host = onHost(gpu.warnings);
    assert.equal(host.length, 1, gpu.warnings.join('\n'));
    assert.match(host[0], /speed_temporal/);
  });

  it('the staging pool keeps a distorted history per rendition only where asked for', async function () {
    const gpu = await openGpuDevice({ label: 'gpu-speed-temporal test' });
    try {
      const plain = new StagingPool({ gpu, depth: 2, renditions: 2, lumaBytes: 16, statsBytes: 64 });
      try {
        assert.equal(plain.distortedHistory, undefined);
        assert.equal(plain.distorted.buffers.length, 6); // (depth + 1) per rendition
        assert.equal(plain.nextDistorted(0).previousDis, undefined);
      } finally {
        plain.destroy();
      }
      const kept = new StagingPool({ gpu, depth: 2, renditions: 2, lumaBytes: 16, statsBytes: 64, distortedHistory: true });
      try {
        assert.equal(kept.distorted, undefined);
        assert.deepEqual(kept.distortedHistory.map((ring) => ring.buffers.length), [3, 3]);
        const a = kept.nextDistorted(0);
        assert.equal(a.previousDis, undefined);
        assert.equal(kept.nextDistorted(1).previousDis, undefined);
        const b = kept.nextDistorted(0);
        assert.equal(b.previousDis, a.dis);
        assert.notEqual(b.dis, a.dis);
        assert.ok(!kept.distortedHistory[1].buffers.includes(b.dis), 'each rendition its own planes');
        kept.forgetDistorted(0);
        assert.equal(kept.nextDistorted(0).previousDis, undefined);
      } finally {
        kept.destroy();
      }
    } finally {
      gpu.destroy();
    }
  });
});
