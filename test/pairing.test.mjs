import assert from 'node:assert/strict';
import { goldenFile } from './helpers/golden.mjs';

import { pairFrames } from '../dist/decode/pair-frames.js';
import { openFrameSource } from '../dist/decode/open-source.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A synthetic FrameSource: `count` frames whose luma[0] is the frame index; it tracks
 * frames out (not yet released), double releases, and how many next() calls overlap.
 */
class FakeSource {
  constructor(label, count, { width = 64, height = 48, bitDepth = 8, delayMs = 0, failAt, formatError } = {}) {
    this.label = label;
    this.count = count;
    this.fmt = { width, height, bitDepth, chroma: '420' };
    this.delayMs = delayMs;
    this.failAt = failAt;
    this.formatError = formatError;
    this.out = 0;
    this.read = 0;
    this.doubleReleases = 0;
    this.pendingNext = 0;
    this.closed = false;
  }
  async format() {
    if (this.formatError) throw this.formatError;
    return this.fmt;
  }
  async close() {
    this.closed = true;
  }
  [Symbol.asyncIterator]() {
    let i = 0;
    return {
      next: async () => {
        this.pendingNext++;
        FakeSource.maxConcurrent = Math.max(FakeSource.maxConcurrent, FakeSource.live());
        try {
          if (this.delayMs) await sleep(this.delayMs);
          if (this.failAt !== undefined && i === this.failAt) throw Object.assign(new Error(`${this.label}: boom at ${i}`), { code: 'E_TEST' });
          if (i >= this.count) return { done: true, value: undefined };
          const index = i++;
          this.read++;
          this.out++;
          let released = false;
          const luma = new Uint8Array(this.fmt.width * this.fmt.height);
          luma[0] = index;
          return {
            done: false,
            value: {
              index,
              format: this.fmt,
              luma,
              release: () => {
                if (released) this.doubleReleases++;
                else this.out--;
                released = true;
              },
            },
          };
        } finally {
          this.pendingNext--;
        }
      },
      return: async () => ({ done: true, value: undefined }),
    };
  }
}
FakeSource.all = [];
FakeSource.maxConcurrent = 0;
FakeSource.live = () => FakeSource.all.reduce((n, s) => n + s.pendingNext, 0);

function sources(refCount, disCount, refOpts = {}, disOpts = {}) {
  const ref = new FakeSource('ref.y4m', refCount, refOpts);
  const dis = new FakeSource('dis.mp4', disCount, disOpts);
  FakeSource.all = [ref, dis];
  return [ref, dis];
}

/** Runs pairFrames to the end, releasing each pair; returns [index, refIndex, disIndex, scored] rows. */
async function collect(ref, dis, options = {}) {
  const rows = [];
  for await (const p of pairFrames(ref, dis, options)) {
    rows.push([p.index, p.ref.index, p.dis.index, p.scored]);
    p.ref.release();
    p.dis.release();
  }
  return rows;
}

function assertAllReleased(...srcs) {
  for (const s of srcs) {
    assert.equal(s.out, 0, `${s.label}: ${s.out} frames never released`);
    assert.equal(s.doubleReleases, 0, `${s.label}: released twice`);
  }
}

async function rejectsWith(promise, code, ...patterns) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected an error ${code}`);
  assert.equal(error.code, code, error.message);
  for (const p of patterns) assert.match(error.message, p);
  return error;
}

describe('pairFrames: libvmaf CLI semantics', () => {
  it('pairs frame i with frame i, output index from 0, every frame scored', async () => {
    const [ref, dis] = sources(5, 5);
    const rows = await collect(ref, dis);
    assert.deepEqual(rows, [0, 1, 2, 3, 4].map((i) => [i, i, i, true]));
    assertAllReleased(ref, dis);
  });

  it('frameSkipRef drops the first N reference frames; indices restart at 0', async () => {
    const [ref, dis] = sources(10, 8);
    const warnings = [];
    const rows = await collect(ref, dis, { frameSkipRef: 2, onWarning: (m) => warnings.push(m) });
    assert.deepEqual(rows, [0, 1, 2, 3, 4, 5, 6, 7].map((i) => [i, i + 2, i, true]));
    assert.deepEqual(warnings, [], 'ref has 10 - 2 = 8 frames left, as many as dis');
    assertAllReleased(ref, dis);
  });

  it('frameSkipDist drops the first N distorted frames', async () => {
    const [ref, dis] = sources(4, 7);
    const rows = await collect(ref, dis, { frameSkipDist: 3 });
    assert.deepEqual(rows, [0, 1, 2, 3].map((i) => [i, i, i + 3, true]));
    assertAllReleased(ref, dis);
  });

  it('frameCnt caps the pairs read', async () => {
    const [ref, dis] = sources(10, 10);
    const warnings = [];
    const rows = await collect(ref, dis, { frameCnt: 3, onWarning: (m) => warnings.push(m) });
    assert.deepEqual(rows.map((r) => r[0]), [0, 1, 2]);
    assert.deepEqual(warnings, []);
    assert.ok(ref.read <= 3 && dis.read <= 3, 'nothing read past frameCnt');
    assertAllReleased(ref, dis);
  });

  it('frameCnt 0 means all frames', async () => {
    const [ref, dis] = sources(6, 6);
    assert.equal((await collect(ref, dis, { frameCnt: 0 })).length, 6);
  });

  it('subsample yields every pair, scoring index % N === 0 (motion still sees every frame)', async () => {
    const [ref, dis] = sources(10, 10);
    const rows = await collect(ref, dis, { subsample: 3 });
    assert.deepEqual(rows.map((r) => r[0]), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(rows.filter((r) => r[3]).map((r) => r[0]), [0, 3, 6, 9]);
    assertAllReleased(ref, dis);
  });

  it('subsample counts from the first pair after the skips; frameCnt counts unscored pairs too', async () => {
    const [ref, dis] = sources(20, 20);
    const rows = await collect(ref, dis, { frameSkipRef: 1, frameSkipDist: 1, subsample: 2, frameCnt: 5 });
    assert.deepEqual(rows, [
      [0, 1, 1, true],
      [1, 2, 2, false],
      [2, 3, 3, true],
      [3, 4, 4, false],
      [4, 5, 5, true],
    ]);
    assertAllReleased(ref, dis);
  });

  it('subsample 0 and 1 score every frame', async () => {
    for (const subsample of [0, 1]) {
      const [ref, dis] = sources(3, 3);
      const rows = await collect(ref, dis, { subsample });
      assert.ok(rows.every((r) => r[3] === true));
    }
  });

  it('different lengths: warns with both counts and stops at the shorter, releasing the rest', async () => {
    const [ref, dis] = sources(8, 5);
    const warnings = [];
    const rows = await collect(ref, dis, { onWarning: (m) => warnings.push(m) });
    assert.equal(rows.length, 5);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /dis\.mp4 ended before ref\.y4m/);
    assert.match(warnings[0], /dis\.mp4 has 5 frames/);
    assert.match(warnings[0], /ref\.y4m has 8/);
    assertAllReleased(ref, dis);

    const [ref2, dis2] = sources(3, 9);
    const w2 = [];
    await collect(ref2, dis2, { frameSkipDist: 2, onWarning: (m) => w2.push(m) });
    assert.match(w2[0], /ref\.y4m has 3 frames, dis\.mp4 has 9 \(2 skipped\)/);
    assertAllReleased(ref2, dis2);

    const [ref3, dis3] = sources(3, 9);
    const w3 = [];
    await collect(ref3, dis3, { countRemaining: false, onWarning: (m) => w3.push(m) });
    assert.match(w3[0], /dis\.mp4 has more than 3/);
    assert.ok(dis3.read < 9, 'the longer input is not read to its end');
  });

  it('zero frames is E_INPUT_EMPTY naming the input', async () => {
    const [ref, dis] = sources(0, 5);
    await rejectsWith(collect(ref, dis), 'E_INPUT_EMPTY', /^ref\.y4m: /);
    assertAllReleased(ref, dis);
    const [ref2, dis2] = sources(5, 0);
    await rejectsWith(collect(ref2, dis2), 'E_INPUT_EMPTY', /^dis\.mp4: /);
    assertAllReleased(ref2, dis2);
  });

  it('skipping every frame is E_INPUT_EMPTY saying so', async () => {
    const [ref, dis] = sources(3, 5);
    await rejectsWith(collect(ref, dis, { frameSkipRef: 4 }), 'E_INPUT_EMPTY', /^ref\.y4m: /, /3 frames/, /first 4 are skipped/);
    assertAllReleased(ref, dis);
  });

  it('mismatched sizes are E_INPUT_MISMATCH naming both inputs and sizes, suggesting --scale', async () => {
    const [ref, dis] = sources(3, 3, { width: 160, height: 90 }, { width: 256, height: 144 });
    const err = await rejectsWith(collect(ref, dis), 'E_INPUT_MISMATCH', /dis\.mp4/, /ref\.y4m/, /256x144/, /160x90/, /--scale/);
    assert.equal(err.input, 'dis.mp4');
    assert.equal(ref.read + dis.read, 0, 'no frame read');
  });

  it('mismatched bit depths are E_INPUT_MISMATCH', async () => {
    const [ref, dis] = sources(3, 3, { bitDepth: 8 }, { bitDepth: 10 });
    await rejectsWith(collect(ref, dis), 'E_INPUT_MISMATCH', /dis\.mp4/, /ref\.y4m/, /bit depth 10/, /8-bit/);
  });

  it('frames smaller than minDimension are E_FRAME_TOO_SMALL naming the minimum', async () => {
    const [ref, dis] = sources(3, 3, { width: 24, height: 24 }, { width: 24, height: 24 });
    await rejectsWith(collect(ref, dis, { minDimension: 32 }), 'E_FRAME_TOO_SMALL', /^ref\.y4m: /, /24x24/, /32x32/);
    const [ref2, dis2] = sources(3, 3, { width: 64, height: 20 }, { width: 64, height: 20 });
    await rejectsWith(collect(ref2, dis2), 'E_FRAME_TOO_SMALL', /at least 32x32/);
    const [ref3, dis3] = sources(2, 2, { width: 24, height: 24 }, { width: 24, height: 24 });
    assert.equal((await collect(ref3, dis3, { minDimension: 16 })).length, 2);
  });

  it('a format error of the reference is raised before the distorted one', async () => {
    const [ref, dis] = sources(3, 3, { formatError: new Error('ref broken') }, { formatError: new Error('dis broken') });
    await assert.rejects(collect(ref, dis), /ref broken/);
  });

  it('rejects bad options with a UsageError', async () => {
    const [ref, dis] = sources(3, 3);
    await rejectsWith(collect(ref, dis, { frameCnt: -1 }), 'E_USAGE', /frameCnt/);
    await rejectsWith(collect(ref, dis, { subsample: 1.5 }), 'E_USAGE', /subsample/);
  });

  it('reads both sources concurrently', async () => {
    FakeSource.maxConcurrent = 0;
    const [ref, dis] = sources(4, 4, { delayMs: 20 }, { delayMs: 20 });
    await collect(ref, dis);
    assert.ok(FakeSource.maxConcurrent >= 2, 'a ref and a dis read were in flight together');
  });

  it('releases read-ahead frames when the consumer stops early', async () => {
    const [ref, dis] = sources(10, 10);
    for await (const p of pairFrames(ref, dis)) {
      p.ref.release();
      p.dis.release();
      if (p.index === 2) break;
    }
    await sleep(5);
    assertAllReleased(ref, dis);
    assert.equal(ref.closed, false, 'pairFrames does not close the sources');
  });

  it('a source error mid-stream propagates, and frames read with it are released', async () => {
    const [ref, dis] = sources(10, 10, {}, { failAt: 3 });
    const got = [];
    await assert.rejects(
      (async () => {
        for await (const p of pairFrames(ref, dis)) {
          got.push(p.index);
          p.ref.release();
          p.dis.release();
        }
      })(),
      /boom at 3/,
    );
    assert.deepEqual(got, [0, 1, 2]);
    assertAllReleased(ref, dis);
  });
});

describe('pairFrames on real inputs', () => {
  it('pairs the src01 y4m pair with a reference skip: 47 pairs and a length warning', async () => {
    const ref = openFrameSource(goldenFile('src01_160x90_8bit/ref.y4m'));
    const dis = openFrameSource(goldenFile('src01_160x90_8bit/dis.y4m'));
    const warnings = [];
    let n = 0;
    try {
      for await (const p of pairFrames(ref, dis, { frameSkipRef: 1, onWarning: (m) => warnings.push(m) })) {
        assert.equal(p.ref.index, p.index + 1);
        assert.equal(p.dis.index, p.index);
        n++;
        p.ref.release();
        p.dis.release();
      }
    } finally {
      await ref.close();
      await dis.close();
    }
    assert.equal(n, 47);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /ref\.y4m has 48 frames \(1 skipped\)/);
    assert.match(warnings[0], /dis\.y4m has 48/);
  });

  it('mismatched real inputs: E_INPUT_MISMATCH names both files', async () => {
    const ref = openFrameSource(goldenFile('src01_160x90_8bit/ref.y4m'));
    const dis = openFrameSource(goldenFile('negated_256x144_2f/dis.y4m'));
    try {
      await rejectsWith(collect(ref, dis), 'E_INPUT_MISMATCH', /negated_256x144_2f\/dis\.y4m/, /src01_160x90_8bit\/ref\.y4m/);
    } finally {
      await ref.close();
      await dis.close();
    }
  });

  it('an 8-bit reference against a 10-bit distorted (ffmpeg-decoded): E_INPUT_MISMATCH', async () => {
    const ref = openFrameSource(goldenFile('src01_288x162_8bit/ref.mkv'));
    const dis = openFrameSource(goldenFile('src01_288x162_10bit/dis.mkv'));
    try {
      await rejectsWith(collect(ref, dis), 'E_INPUT_MISMATCH', /10bit\/dis\.mkv/, /8bit\/ref\.mkv/, /bit depth/);
    } finally {
      await ref.close();
      await dis.close();
    }
  });
});
