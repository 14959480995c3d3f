// `--backend auto` and short runs (src/pipeline/short-run.ts): which runs go to the cpu backend
// without opening the GPU, and the frame counts known before any frame is read.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openFrameSource } from '../dist/index.js';
import { resolveRun } from '../dist/pipeline/run-plan.js';
import { autoRunsOnCpu, CPU_FRAMES_PER_THREAD, knownRunFrames, runLengthKnowable, shortRunOnCpu } from '../dist/pipeline/short-run.js';
import { scratchDir, writeFramePair } from './helpers/gpu-vs-cpu.mjs';

const dir = scratchDir('vmaf-short-');

describe('short runs on the cpu backend (auto)', () => {
  it('about six 1080p frames per cpu thread with VIF, sixteen without, over every rendition', () => {
    const hd = { width: 1920, height: 1080, vif: true };
    assert.deepEqual(CPU_FRAMES_PER_THREAD, { withVif: 6, withoutVif: 16 });
    assert.equal(shortRunOnCpu({ ...hd, frames: 96, renditions: 1, threads: 16 }), true);
    assert.equal(shortRunOnCpu({ ...hd, frames: 97, renditions: 1, threads: 16 }), false);
    assert.equal(shortRunOnCpu({ ...hd, frames: 48, renditions: 2, threads: 16 }), true);
    assert.equal(shortRunOnCpu({ ...hd, frames: 49, renditions: 2, threads: 16 }), false);
    assert.equal(shortRunOnCpu({ ...hd, frames: 12, renditions: 1, threads: 2 }), true);
    assert.equal(shortRunOnCpu({ ...hd, frames: 13, renditions: 1, threads: 2 }), false);
    assert.equal(shortRunOnCpu({ ...hd, vif: false, frames: 256, renditions: 1, threads: 16 }), true);
    assert.equal(shortRunOnCpu({ ...hd, vif: false, frames: 257, renditions: 1, threads: 16 }), false);
    assert.equal(shortRunOnCpu({ width: 3840, height: 2160, vif: true, frames: 24, renditions: 1, threads: 16 }), true);
    assert.equal(shortRunOnCpu({ width: 3840, height: 2160, vif: true, frames: 25, renditions: 1, threads: 16 }), false);
  });

  it('the length is knowable from --frame_cnt or a y4m or raw reference file, not from other inputs', () => {
    assert.equal(runLengthKnowable('a.y4m', undefined), true);
    assert.equal(runLengthKnowable('a.YUV', undefined), true);
    assert.equal(runLengthKnowable('a.mp4', undefined), false);
    assert.equal(runLengthKnowable('a.mp4', 10), true);
    assert.equal(runLengthKnowable('-', undefined), false);
  });

  it('a y4m file counts its frames from its size, less the skipped ones, at most --frame_cnt', async () => {
    const format = { width: 37, height: 21, bitDepth: 10 };
    const frames = Array.from({ length: 7 }, (_, f) => {
      const n = 37 * 21 + 2 * 19 * 11;
      return [new Uint16Array(n).fill(100 + f), new Uint16Array(n).fill(120 + f)];
    });
    const [ref] = writeFramePair(dir, 'seven', format, frames);
    const count = async (options) => {
      const source = openFrameSource(ref);
      try {
        return await knownRunFrames(ref, source.format(), options);
      } finally {
        await source.close();
      }
    };
    assert.equal(await count({}), 7);
    assert.equal(await count({ frameSkipRef: 2 }), 5);
    assert.equal(await count({ frameCnt: 3 }), 3);
    assert.equal(await count({ frameCnt: 30 }), 7);
    assert.equal(await count({ frameSkipRef: 9 }), 0);
  });

  it('a raw file counts exactly; an input without a size gives --frame_cnt or nothing; an unreadable one nothing', async () => {
    const raw = join(dir, 'five.yuv');
    writeFileSync(raw, Buffer.alloc(5 * (16 * 8 + 2 * 8 * 4), 80));
    const source = openFrameSource(raw, { width: 16, height: 8 });
    try {
      assert.equal(await knownRunFrames(raw, source.format(), {}), 5);
    } finally {
      await source.close();
    }
    const never = new Promise(() => {});
    assert.equal(await knownRunFrames('clip.mp4', never, { frameCnt: 4 }), 4);
    assert.equal(await knownRunFrames('clip.mp4', never, {}), undefined);
    const missing = Promise.reject(new Error('no such file'));
    missing.catch(() => {});
    assert.equal(await knownRunFrames(join(dir, 'missing.y4m'), missing, {}), undefined);
  });

  it('auto: the plan, the reference and the threads decide together; the format is asked for only where the length may be known', async () => {
    // 16 frames of 1920x1080, as a y4m file of that size (its content is not read).
    const ref = join(dir, 'sixteen.y4m');
    const format = { width: 1920, height: 1080, bitDepth: 8, chroma: '420' };
    writeFileSync(ref, Buffer.alloc(16 * (1920 * 1080 * 3 / 2 + 6)));
    const { plan: v0 } = await resolveRun({});
    const { plan: v1 } = await resolveRun({ models: ['version=vmaf_v1.0.16_3d0h'] });
    const run = (threads, frameCnt) => ({ renditions: 1, threads, frameCnt });
    // VIF: six frames a thread; without (v1): sixteen.
    assert.equal(await autoRunsOnCpu(v0, ref, async () => format, run(3)), true);
    assert.equal(await autoRunsOnCpu(v0, ref, async () => format, run(2)), false);
    assert.equal(await autoRunsOnCpu(v0, ref, async () => format, run(2, 12)), true);
    assert.equal(await autoRunsOnCpu(v1, ref, async () => format, run(1)), true);
    let asked = 0;
    const counting = async () => (asked++, format);
    assert.equal(await autoRunsOnCpu(v0, 'clip.mp4', counting, run(16)), false);
    assert.equal(asked, 0, 'no format asked for an input of unknown length');
    assert.equal(await autoRunsOnCpu(v0, ref, () => Promise.reject(new Error('bad header')), run(16)), false);
  });
});
