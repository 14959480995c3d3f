// The gpu backend's warm start (src/kernels/warm-start-backend.ts): the first frames scored on
// the cpu backend while the GPU opens, the rest on the GPU, every value the cpu backend's own.
// The GPU here is lavapipe. The reference is read at a pace that lets the GPU open and answer
// mid-clip (a few frames at once, then one every 60 ms until the hand-over, then at full
// speed), so that each run really has frames from both backends; the split itself is the
// race's, and the tests assert only that it lies inside the clip.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score, scoreLadder, openFrameSource } from '../dist/index.js';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { warmStartApplies } from '../dist/kernels/create-backend.js';
import { assertSameFrames, scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';
import { countingSource } from './helpers/counting-source.mjs';

const FRAMES = 36;
const dir = scratchDir('vmaf-warm-');

/**
 * A moving 8-bit 4:2:0 pair of FRAMES frames: waves that drift a little each frame (so that
 * motion and the temporal features are not zero), the distorted copy with seeded noise.
 */
function clip(width, height, name) {
  let seed = 12345;
  const noise = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) % 9 - 4;
  const plane = (w, h, f, scale, phase) => {
    const ref = new Uint8Array(w * h);
    const dis = new Uint8Array(w * h);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const v = 128 + scale * Math.sin((x * scale) / 40 + f * 0.3 + phase) * Math.cos((y - f) / 11);
        ref[y * w + x] = Math.max(0, Math.min(255, Math.round(v)));
        dis[y * w + x] = Math.max(0, Math.min(255, Math.round(v) + noise()));
      }
    }
    return [ref, dis];
  };
  const [cw, ch] = [Math.ceil(width / 2), Math.ceil(height / 2)];
  const frames = Array.from({ length: FRAMES }, (_, f) => {
    const [y, u, v] = [plane(width, height, f, 60, 0), plane(cw, ch, f, 20, 1), plane(cw, ch, f, 25, 2)];
    return [[y[0], u[0], v[0]], [y[1], u[1], v[1]]];
  });
  const [ref, dis] = writeFramePair(dir, name, { width, height, bitDepth: 8 }, frames);
  return { ref, dis };
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A FrameSource over `path` read at the test's pace: the first frames at once, then one every
 * 60 ms while `handedOver()` is false.
 */
function pacedSource(path, handedOver, label, planes) {
  const source = openFrameSource(path, { label, planes });
  return {
    label: source.label,
    format: () => source.format(),
    close: () => source.close(),
    [Symbol.asyncIterator]() {
      const inner = source[Symbol.asyncIterator]();
      let n = 0;
      return {
        next: async () => {
          if (n++ >= 4 && !handedOver()) await sleep(60);
          return inner.next();
        },
        return: (v) => inner.return?.(v) ?? Promise.resolve({ done: true, value: v }),
      };
    },
  };
}

/**
 * One warm-started gpu run over a paced reference (its frames with `planes`): { frames,
 * split, stats } (stats: the reference's frame counts).
 */
async function warmRun(ref, dis, options, run = (r, d, o) => score(r, d, o), planes = 'luma') {
  let backend;
  const handedOver = () => backend?.warmStartSplit?.().gpuFrom !== undefined;
  const counted = countingSource(pacedSource(ref, handedOver, 'reference', planes));
  const source = counted.source;
  const frames = await lastValueFrom(
    run(source, dis, { threads: 2, ...options, backend: 'gpu', warmStart: true, onBackend: (b) => (backend = b) }).pipe(toArray()),
  );
  return { frames, split: backend.warmStartSplit(), stats: counted.stats };
}

function assertSplitInside(split, what) {
  assert.ok(split.gpuFrom !== undefined && split.gpuFrom > 0 && split.gpuFrom < FRAMES, `${what}: the GPU took over inside the clip (at ${split.gpuFrom})`);
}

function assertAllReleased(stats, what) {
  assert.equal(stats.read, FRAMES, `${what}: frames read`);
  assert.equal(stats.released, stats.read, `${what}: every reference frame released`);
  assert.equal(stats.doubleReleases, 0, `${what}: no frame released twice`);
}

describe('gpu warm start (lavapipe)', function () {
  this.timeout(600000);
  let small;
  before(() => {
    small = clip(161, 91, 'odd');
  });

  it('vmaf_v0.6.1 on an odd size: every frame identical to the cpu backend, the split inside the clip, every frame released', async () => {
    const warm = await warmRun(small.ref, small.dis, {});
    const cpu = await lastValueFrom(score(small.ref, small.dis, { threads: 2, backend: 'cpu' }).pipe(toArray()));
    assert.equal(warm.frames.length, FRAMES);
    assertSameFrames(warm.frames, cpu, 'v0 features', { index: true });
    assertSameFrames(warm.frames, cpu, 'v0 scores', { field: 'scores' });
    assertSplitInside(warm.split, 'v0');
    assertAllReleased(warm.stats, 'v0');
  });

  it('a five-frame motion window with moving average (4 frames back, 2 ahead), speed_temporal and --subsample 3: identical to the cpu backend', async () => {
    const options = {
      models: [],
      features: ['motion=motion_five_frame_window=true:motion_moving_average=true', 'speed_temporal'],
      subsample: 3,
    };
    const warm = await warmRun(small.ref, small.dis, options);
    const cpu = await lastValueFrom(score(small.ref, small.dis, { threads: 2, backend: 'cpu', ...options }).pipe(toArray()));
    assert.equal(warm.frames.length, Math.ceil(FRAMES / 3));
    assertSameFrames(warm.frames, cpu, 'motion3 window', { index: true });
    assert.ok(Object.keys(cpu[1].features).some((k) => k.startsWith('integer_motion3')), 'the window instance is logged');
    assertSplitInside(warm.split, 'motion3 window');
    assertAllReleased(warm.stats, 'motion3 window');
  });

  it('VMAF v1 (hfr 3d0h) on a ladder of two renditions: each rendition identical to the cpu backend', async () => {
    const big = clip(218, 166, 'v1'); // chroma 109x83: SpEED needs 80x80, CAMBI 216 a side
    const options = { models: ['version=vmaf_v1.0.16_hfr_3d0h'], scale: false };
    const renditions = [
      { input: big.dis, name: 'a' },
      { input: big.ref, name: 'same' },
    ];
    const warm = await warmRun(big.ref, renditions, options, (r, d, o) => scoreLadder(r, d, o), 'all');
    const cpu = await lastValueFrom(scoreLadder(big.ref, renditions, { threads: 2, backend: 'cpu', ...options }).pipe(toArray()));
    for (const name of ['a', 'same']) {
      const got = warm.frames.filter((x) => x.rendition === name).map((x) => x.result);
      const want = cpu.filter((x) => x.rendition === name).map((x) => x.result);
      assert.equal(got.length, FRAMES, `${name}: ${got.map((r) => r.index).join(' ')} split ${warm.split.gpuFrom}`);
      assertSameFrames(got, want, `v1 ${name}`, { index: true });
      assertSameFrames(got, want, `v1 ${name} scores`, { field: 'scores' });
    }
    assertSplitInside(warm.split, 'v1 ladder');
    assertAllReleased(warm.stats, 'v1 ladder');
  });

  it('is not used for runs that accumulate over the run (APSNR), on the cpu backend, with --gpu-adapter, or when turned off', async () => {
    const { plan } = await resolveRun({});
    const { plan: apsnr } = await resolveRun({ features: ['psnr=enable_apsnr=true'] });
    assert.equal(warmStartApplies(plan, 'gpu', true), true);
    assert.equal(warmStartApplies(plan, 'auto', true), true);
    assert.equal(warmStartApplies(apsnr, 'gpu', true), false);
    assert.equal(warmStartApplies(plan, 'cpu', true), false);
    assert.equal(warmStartApplies(plan, 'gpu', false), false);
    assert.equal(warmStartApplies(plan, 'gpu', true, 'llvmpipe'), false);
    // This machine has no hardware GPU: 'auto' leaves it off.
    assert.equal(warmStartApplies(plan, 'gpu', 'auto'), false);
  });

  describe('command line', () => {
    const cli = join(import.meta.dirname, '..', 'bin', 'vmaf-stream');
    const run = (args, env = {}) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

    it('--warm-start on with one frame: scored on the cpu, the GPU never opened, the log identical to the cpu backend\'s', () => {
      const out = join(dir, 'one-warm.json');
      const want = join(dir, 'one-cpu.json');
      const warm = run(['-r', small.ref, '-d', small.dis, '--backend', 'gpu', '--warm-start', 'on', '--frame_cnt', '1', '--precision', '17', '--json', '-o', out, '-q'], { VMAF_STREAM_TRACE: '1' });
      assert.equal(warm.status, 0, warm.stderr);
      assert.doesNotMatch(warm.stderr, /opening the gpu backend|webgpu loaded/);
      const cpu = run(['-r', small.ref, '-d', small.dis, '--backend', 'cpu', '--frame_cnt', '1', '--precision', '17', '--json', '-o', want, '-q']);
      assert.equal(cpu.status, 0, cpu.stderr);
      const strip = (text) => text.replace(/"fps": [^,\n]+/, '');
      const got = readFileSync(out, 'utf8');
      assert.match(got, /"integer_adm2": [0-9.]+/);
      assert.equal(strip(got), strip(readFileSync(want, 'utf8')));
    });

    it('--warm-start takes on, off or auto', () => {
      const r = run(['-r', small.ref, '-d', small.dis, '--warm-start', 'maybe', '--json', '-o', join(dir, 'x.json')]);
      assert.equal(r.status, 2);
      assert.match(r.stderr, /--warm-start takes on, off or auto, not 'maybe'/);
    });
  });
});
