// The gpu backend on a thread of its own (src/kernels/gpu-thread): the same values as on the
// main thread and as libvmaf's logs, errors with their class, code, input and frame, frames
// given back to their pools, a CLI run that ends at once, and when a run takes the thread.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, toArray } from 'rxjs';
import { score, scoreLadder } from '../dist/index.js';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { gpuThreadPays } from '../dist/pipeline/short-run.js';
import { discardGpuThread, hasPrestartedGpuThread, prestartGpuThread } from '../dist/kernels/gpu-thread/prestart.js';
import { earlyStartFor } from '../dist/cli/early-gpu-thread.js';
import { loadNative } from '../dist/kernels/native.js';
import { goldenClip } from './helpers/golden.mjs';
import { backendsUnderTest } from './helpers/env.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const V1 = 'version=vmaf_v1.0.16_3d0h:name=vmaf_v1';
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-gpu-thread-'));

/** Runs `fn` with the gpu thread forced on ('1') or off ('0'). */
async function withThread(on, fn) {
  const before = process.env.VMAF_STREAM_GPU_THREAD;
  process.env.VMAF_STREAM_GPU_THREAD = on ? '1' : '0';
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.VMAF_STREAM_GPU_THREAD;
    else process.env.VMAF_STREAM_GPU_THREAD = before;
  }
}

async function scored(clip, options, on) {
  let backend;
  const frames = await withThread(on, () => lastValueFrom(score(clip.ref, clip.dis, { backend: 'gpu', threads: 2, ...options, onBackend: (b) => (backend = b) }).pipe(toArray())));
  return { frames, backend };
}

function assertLibvmaf(frames, golden, key) {
  assert.equal(frames.length, golden.length);
  let compared = 0;
  for (const [i, frame] of golden.entries()) {
    assert.equal(frames[i].scores[key], frame.metrics[key], `frame ${i}: ${key}`);
    for (const [k, v] of Object.entries(frames[i].features)) {
      assert.equal(v, frame.metrics[k], `frame ${i}: ${k}`);
      compared++;
    }
  }
  return compared;
}

describe('gpu backend on a thread of its own', function () {
  this.timeout(600_000);
  before(function () {
    if (!backendsUnderTest().includes('gpu')) this.skip();
  });

  it('VMAF v0.6.1: libvmaf\'s log exactly, the same frames as on the main thread, core parts counted', async () => {
    const clip = goldenClip('src01_288x162_10bit');
    const threaded = await scored(clip, {}, true);
    assert.equal(threaded.backend.constructor.name, 'GpuThreadBackend');
    assert.equal(threaded.backend.kind, 'gpu');
    const golden = clip.log('libvmaf').frames;
    assert.ok(assertLibvmaf(threaded.frames, golden, 'vmaf') > golden.length * 10);
    const runs = threaded.backend.coreRuns();
    assert.equal(runs.vif, golden.length);
    const main = await scored(clip, {}, false);
    assert.notEqual(main.backend.constructor.name, 'GpuThreadBackend');
    assert.deepEqual(threaded.frames, main.frames);
  });

  it('VMAF v1 (CAMBI, speed_chroma, adm3, motion3 on the GPU, chroma through shared memory): libvmaf\'s log exactly', async () => {
    const clip = goldenClip('src01_288x162_10bit');
    const { frames, backend } = await scored(clip, { models: [V1] }, true);
    assert.equal(backend.constructor.name, 'GpuThreadBackend');
    assertLibvmaf(frames, clip.log('libvmaf-extra').frames, 'vmaf_v1');
  });

  it('a ladder: each rendition as on the main thread', async () => {
    const clip = goldenClip('src01_160x90_8bit');
    const renditions = [{ input: clip.dis, name: 'a' }, { input: clip.ref, name: 'b' }];
    const options = { backend: 'gpu', threads: 2, frameCnt: 8 };
    const threaded = await withThread(true, () => lastValueFrom(scoreLadder(clip.ref, renditions, options).pipe(toArray())));
    const main = await withThread(false, () => lastValueFrom(scoreLadder(clip.ref, renditions, options).pipe(toArray())));
    assert.equal(threaded.length, 16);
    assert.deepEqual(threaded, main);
  });

  it('an error raised on the thread keeps its class and code; one from the input names it and the frame', async () => {
    // A 10-bit sample above 1023: CAMBI's gpu kernel refuses it, on the thread.
    const width = 240;
    const height = 216;
    const samples = new Uint16Array(width * height * 1.5).fill(512);
    samples[width * 100 + 37] = 2000;
    const over = join(tmp, 'over.y4m');
    writeFileSync(over, Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C420p10\n`, 'latin1'), Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer)]));
    await withThread(true, () =>
      assert.rejects(lastValueFrom(score(over, over, { backend: 'gpu', threads: 2, features: ['cambi'], noPrediction: true })), (e) => {
        assert.match(e.message, /cambi: the input holds a value greater than 1023, the largest at 10 bits/);
        assert.equal(typeof e.code, 'string');
        assert.ok(e instanceof Error);
        return true;
      }),
    );
    // A y4m cut inside its third frame: the reader's error, while the thread holds frames.
    const clip = goldenClip('src01_160x90_8bit');
    const text = readFileSync(clip.ref);
    const frameBytes = 160 * 90 * 1.5 + 6;
    const header = text.indexOf(0x0a) + 1;
    const cut = join(tmp, 'cut.y4m');
    writeFileSync(cut, text.subarray(0, header + 2 * frameBytes + 100));
    await withThread(true, () =>
      assert.rejects(lastValueFrom(score(cut, clip.dis, { backend: 'gpu', threads: 2 })), (e) => {
        assert.equal(e.code, 'E_INPUT_TRUNCATED');
        assert.equal(e.name, 'InputError');
        assert.match(e.message, /cut\.y4m: frame 2/);
        return true;
      }),
    );
    // CAMBI refuses 160x90 frames, as libvmaf does: that is the run's error, known from the
    // header, whatever the reader has reached (it once raced the cut's error).
    for (let i = 0; i < 3; i++) {
      await withThread(true, () =>
        assert.rejects(lastValueFrom(score(cut, clip.dis, { backend: 'gpu', threads: 2, features: ['cambi'] })), (e) => {
          assert.equal(e.code, 'E_FRAME_TOO_SMALL');
          assert.match(e.message, /cambi: frames of 160x90 are too small/);
          return true;
        }),
      );
    }
  });

  it('the command line: the same log with and without the thread, and a failed run ends with status 1 at once', () => {
    const clip = goldenClip('src01_288x162_8bit');
    const run = (on, out, extra = []) =>
      spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', 'gpu', '--json', '-o', out, '-q', ...extra], {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, VMAF_STREAM_GPU_THREAD: on ? '1' : '0' },
      });
    const a = run(true, join(tmp, 'a.json'));
    const b = run(false, join(tmp, 'b.json'));
    assert.equal(a.status, 0, a.stderr);
    assert.equal(b.status, 0, b.stderr);
    const frames = (file) => JSON.parse(readFileSync(file, 'utf8')).frames;
    assert.deepEqual(frames(join(tmp, 'a.json')), frames(join(tmp, 'b.json')));
    // The run fails on its first frame while the thread's kernels may still be compiling: status 1, no abort.
    const width = 240;
    const height = 216;
    const samples = new Uint16Array(width * height * 1.5).fill(512);
    samples[7] = 4000;
    const over = join(tmp, 'over-cli.y4m');
    writeFileSync(over, Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C420p10\n`, 'latin1'), Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer)]));
    const failed = spawnSync(process.execPath, [BIN, '-r', over, '-d', over, '--backend', 'gpu', '--feature', 'cambi', '-q'], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, VMAF_STREAM_GPU_THREAD: '1' },
    });
    assert.equal(failed.status, 1, failed.stderr);
    assert.match(failed.stderr, /greater than 1023/);
  });

  it('the inputs are located while the thread compiles its kernels: the question goes ahead of the compile', () => {
    const clip = goldenClip('src01_160x90_8bit'); // y4m files: located
    const r = spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', 'gpu', '--json', '-o', join(tmp, 'early.json'), '-q'], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, VMAF_STREAM_GPU_THREAD: '1', VMAF_STREAM_TRACE: '1' },
    });
    assert.equal(r.status, 0, r.stderr);
    const at = (pattern) => Number(r.stderr.match(new RegExp(`trace ([\\d.]+) ${pattern}`))?.[1]);
    const compiling = at('kernels: compiling \\(gpu thread\\)');
    const located = at('frames located: ');
    // Dawn's shader modules are made synchronously, each traced as a 'pipeline call' when made.
    const calls = [...r.stderr.matchAll(/trace ([\d.]+) pipeline call: /g)].map((m) => Number(m[1]));
    assert.ok(compiling > 0 && located > 0 && calls.length > 3, r.stderr);
    // The frames were located while the thread made its modules, not after the last.
    assert.ok(located < Math.max(...calls), r.stderr);
  });
});

describe('when a gpu run takes the thread (short-run.ts)', function () {
  const format = (width, height) => () => Promise.resolve({ width, height, bitDepth: 8, chroma: '420', fps: 25 });
  it('without a thread started early: runs with gpu extractor kernels (v1) of 300 1080p frames or more, or of unknown length; never v0.6.1 alone', async () => {
    const v0 = (await resolveRun({})).plan;
    const v1 = (await resolveRun({ models: [V1] })).plan;
    const sized = (frameCnt, renditions = 1) => ({ frameCnt, renditions });
    assert.equal(await gpuThreadPays(v1, 'ref.mp4', format(1920, 1080), sized(299)), false);
    assert.equal(await gpuThreadPays(v1, 'ref.mp4', format(1920, 1080), sized(300)), true);
    assert.equal(await gpuThreadPays(v1, 'ref.mp4', format(3840, 2160), sized(75)), true);
    assert.equal(await gpuThreadPays(v1, 'ref.mp4', format(1920, 1080), sized(75, 4)), true);
    assert.equal(await gpuThreadPays(v1, 'live.mp4', format(1920, 1080), { renditions: 1 }), true);
    assert.equal(await gpuThreadPays(v0, 'ref.mp4', format(1920, 1080), sized(10000)), false);
    assert.equal(await gpuThreadPays(v0, 'live.mp4', format(1920, 1080), { renditions: 1 }), false);
  });

  it('a run takes a thread started early for it, v0 included, and the rule above applies only without one', async () => {
    const v0 = (await resolveRun({})).plan;
    prestartGpuThread({ kind: 'cpu', gpuAdapter: undefined, gpuTimeoutMs: undefined, dawnDiagnostics: false });
    try {
      assert.equal(hasPrestartedGpuThread(), true);
      assert.equal(await gpuThreadPays(v0, 'ref.mp4', format(1920, 1080), { frameCnt: 10, renditions: 1 }), true);
    } finally {
      discardGpuThread();
    }
    assert.equal(hasPrestartedGpuThread(), false);
    assert.equal(await gpuThreadPays(v0, 'ref.mp4', format(1920, 1080), { frameCnt: 10, renditions: 1 }), false);
  });

  it('the command line starts the driver and the thread early for runs that may score on the GPU (early-gpu-thread.ts)', () => {
    const sizes = new Map([['short.y4m', 100 * 3110400], ['long.y4m', 300 * 3110400]]);
    const probe = (hardware) => ({ mayHaveHardwareGpu: () => hardware, fileSize: (path) => sizes.get(path), threadForced: undefined, threadFrames: 300 });
    const start = (argv, hardware = true) => {
      const s = earlyStartFor(argv, probe(hardware));
      return s.thread ? `thread ${s.thread.kind}${s.thread.gpuTimeoutMs ? ` ${s.thread.gpuTimeoutMs}` : ''}` : s.prewarm ? 'prewarm' : 'none';
    };
    // Dawn's own lines: --verbose, or VMAF_STREAM_VERBOSE=1 (the thread opens its device before the run's options reach it).
    const diagnostics = (argv, verboseByEnvironment) => earlyStartFor(argv, { ...probe(true), verboseByEnvironment }).thread.dawnDiagnostics;
    assert.equal(diagnostics(['-r', 'long.y4m', '-d', 'd.y4m'], false), false);
    assert.equal(diagnostics(['-r', 'long.y4m', '-d', 'd.y4m', '--verbose'], false), true);
    assert.equal(diagnostics(['-r', 'long.y4m', '-d', 'd.y4m'], true), true);
    // --backend gpu: always, whatever the length; auto: only with a hardware GPU and a run not short by its arguments.
    assert.equal(start(['-r', 'short.y4m', '-d', 'd.y4m', '--backend', 'gpu', '--gpu-timeout', '2']), 'thread gpu 2000');
    assert.equal(start(['-r', 'short.y4m', '-d', 'd.y4m', '--backend', 'gpu'], false), 'thread gpu');
    assert.equal(start(['-r', 'long.y4m', '-d', 'd.y4m']), 'thread auto');
    assert.equal(start(['-r', 'ref.mp4', '-d', 'd.mp4']), 'thread auto');
    assert.equal(start(['-r', 'long.y4m', '-d', 'd.y4m'], false), 'none');
    assert.equal(start(['-r', 'short.y4m', '-d', 'd.y4m']), 'none');
    assert.equal(start(['-r', 'ref.mp4', '-d', 'd.mp4', '--frame_cnt', '299']), 'none');
    assert.equal(start(['-r', 'ref.mp4', '-d', 'd.mp4', '--frame_cnt', '300']), 'thread auto');
    // Nothing for the cpu backend, the queue, help, or a command line the full parse rejects.
    assert.equal(start(['-r', 'long.y4m', '-d', 'd.y4m', '--backend', 'cpu']), 'none');
    assert.equal(start(['-r', 'long.y4m', '-d', 'd.y4m', '--queue', 'redis://x']), 'none');
    assert.equal(start(['worker', '--queue', 'redis://x']), 'none');
    assert.equal(start(['--help']), 'none');
    assert.equal(start(['-r', 'long.y4m', '--no-such-option']), 'none');
    assert.equal(start(['-r', 'long.y4m', '-d', 'd.y4m', '--backend', 'gpu', '--gpu-timeout', 'soon']), 'none');
  });
  it('the addon loads the GPU driver on a thread of its own, once, and waits for it (prewarmVulkan)', () => {
    const native = loadNative();
    native.prewarmVulkan();
    native.prewarmVulkan();
    const started = performance.now();
    native.awaitVulkanPrewarm();
    assert.ok(performance.now() - started < 2500);
    native.awaitVulkanPrewarm();
  });
});
