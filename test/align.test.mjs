// Frame alignment: luma PSNR, offset search, alignPairs, DriftMonitor.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { from, lastValueFrom, map, toArray } from 'rxjs';

import { openFrameSource } from '../dist/decode/open-source.js';
import { pairFrames } from '../dist/decode/pair-frames.js';
import {
  DriftMonitor,
  alignPairs,
  confidenceOfMargin,
  framePsnr,
  gridStep,
  lumaPsnr,
  psnrCap,
  searchOffset,
  thumbnail,
  thumbnailGeometry,
} from '../dist/pipeline/align.js';
import { countingSource } from './helpers/counting-source.mjs';
import { readY4m, writeY4m } from './helpers/y4m.mjs';
import { goldenClip } from './helpers/golden.mjs';

const CLIP = goldenClip('src01_160x90_8bit');
const REF = CLIP.ref;
const DIS = CLIP.dis;

let tmp;
/** Writes, under the test's temp folder, a y4m of the given frame numbers of `y4m`; returns its path. */
function writeClip(name, y4m, indices) {
  const file = join(tmp, name);
  writeY4m(file, y4m, indices);
  return file;
}
const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);

/** Opens a y4m through the counting wrapper with a small pool (4 slots: less than the search's K). */
function open(file, poolSlots = 4) {
  return countingSource(openFrameSource(file, { poolSlots }));
}

function assertAllReleased(...all) {
  for (const s of all) {
    assert.equal(s.doubleReleases, 0, `${s.label}: frames released twice`);
    assert.equal(s.released, s.read, `${s.label}: ${s.read - s.released} of ${s.read} frames never released`);
  }
}

/** Runs a pair iterable to the end; returns [refIndex, disIndex, refLuma, disLuma] per pair (copies), releasing each. */
async function collect(pairs) {
  const rows = [];
  let expected = 0;
  for await (const p of pairs) {
    assert.equal(p.index, expected++, 'pair indexes count from 0');
    rows.push({ ref: p.ref.index, dis: p.dis.index, refLuma: Buffer.from(p.ref.luma), disLuma: Buffer.from(p.dis.luma), scored: p.scored });
    p.ref.release();
    p.dis.release();
  }
  return rows;
}

/** The pairs of two files aligned by skip counts, through plain pairFrames. */
async function alignedPairs(refFile, disFile, frameSkipRef, frameSkipDist) {
  const ref = openFrameSource(refFile);
  const dis = openFrameSource(disFile);
  try {
    return await collect(pairFrames(ref, dis, { frameSkipRef, frameSkipDist }));
  } finally {
    await ref.close();
    await dis.close();
  }
}

function assertSamePairs(actual, expected) {
  assert.equal(actual.length, expected.length, 'as many pairs');
  for (let i = 0; i < expected.length; i++) {
    assert.ok(actual[i].refLuma.equals(expected[i].refLuma), `pair ${i}: same reference picture`);
    assert.ok(actual[i].disLuma.equals(expected[i].disLuma), `pair ${i}: same distorted picture`);
  }
}

async function runAlign(refFile, disFile, options = {}) {
  const ref = open(refFile);
  const dis = open(disFile);
  const reports = [];
  const warnings = [];
  try {
    const rows = await collect(
      alignPairs(ref.source, dis.source, { onReport: (r) => reports.push(r), onWarning: (w) => warnings.push(w), ...options }),
    );
    return { rows, reports, warnings, ref: ref.stats, dis: dis.stats };
  } finally {
    await ref.source.close();
    await dis.source.close();
  }
}

/** A synthetic 64x48 10-bit source: frame i shows noise seeded by content(i); tracks releases. */
class FakeSource {
  constructor(label, count, content, failAt) {
    Object.assign(this, { label, count, content, failAt, read: 0, released: 0, doubleReleases: 0, returned: false });
    this.fmt = { width: 64, height: 48, bitDepth: 10, chroma: '420' };
  }
  async format() {
    return this.fmt;
  }
  async close() {}
  [Symbol.asyncIterator]() {
    let i = 0;
    return {
      next: async () => {
        if (i === this.failAt) throw new Error(`${this.label}: boom at ${i}`);
        if (i >= this.count) return { done: true, value: undefined };
        const index = i++;
        this.read++;
        let seed = this.content(index) * 2654435761 + 7;
        const luma = new Uint16Array(64 * 48).map(() => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 22));
        let released = false;
        const release = () => {
          if (released) this.doubleReleases++;
          else this.released++;
          released = true;
        };
        return { done: false, value: { index, format: this.fmt, luma, release } };
      },
      return: async () => {
        this.returned = true;
        return { done: true, value: undefined };
      },
    };
  }
  assertAllReleased() {
    assert.equal(this.doubleReleases, 0, `${this.label}: released twice`);
    assert.equal(this.released, this.read, `${this.label}: ${this.read - this.released} frames never released`);
  }
}

let refY4m;
let disY4m;

before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'vmaf-align-'));
  refY4m = readY4m(REF);
  disY4m = readY4m(DIS);
  assert.equal(refY4m.frames.length, 48);
  assert.equal(disY4m.frames.length, 48);
});

after(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------

describe('align: luma PSNR', () => {
  const g8 = { width: 7, height: 5, bitDepth: 8 };

  it('identical planes give the cap, 6·bitDepth + 12 dB', () => {
    const a = new Uint8Array(35).fill(17);
    assert.equal(lumaPsnr(a, a.slice(), g8), 60);
    assert.equal(psnrCap(10), 72);
    const b = new Uint16Array(35).fill(700);
    assert.equal(lumaPsnr(b, b.slice(), { ...g8, bitDepth: 10 }), 72);
  });

  it('is 10·log10(peak² / MSE), exact', () => {
    const a = new Uint8Array(35);
    const b = new Uint8Array(35).fill(1);
    assert.equal(lumaPsnr(a, b, g8), 10 * Math.log10(255 * 255));
    b[3] = 11; // SSE = 34 + 121 = 155
    assert.equal(lumaPsnr(a, b, g8), 10 * Math.log10((255 * 255) / (155 / 35)));
    const c = new Uint16Array(35);
    const d = new Uint16Array(35).fill(4);
    assert.equal(lumaPsnr(c, d, { ...g8, bitDepth: 10 }), 10 * Math.log10((1023 * 1023) / 16));
    const e = new Uint16Array(35);
    const f = new Uint16Array(35).fill(65535);
    assert.equal(lumaPsnr(e, f, { ...g8, bitDepth: 16 }), 0);
  });

  it('a grid step measures the points of the grid; thumbnails give the same value bit for bit', () => {
    const w = 37;
    const h = 23;
    const a = new Uint16Array(w * h).map((_, i) => (i * 7919) % 1024);
    const b = new Uint16Array(w * h).map((_, i) => (i * 104729 + 13) % 1024);
    const g = { width: w, height: h, bitDepth: 10 };
    for (const step of [1, 2, 3, 5]) {
      let sse = 0;
      let n = 0;
      for (let y = 0; y < h; y += step) {
        for (let x = 0; x < w; x += step) {
          const diff = a[y * w + x] - b[y * w + x];
          sse += diff * diff;
          n++;
        }
      }
      assert.equal(lumaPsnr(a, b, g, step), 10 * Math.log10((1023 * 1023) / (sse / n)));
      const tg = thumbnailGeometry(g, step);
      assert.equal(lumaPsnr(thumbnail(a, w, h, step), thumbnail(b, w, h, step), tg), lumaPsnr(a, b, g, step));
    }
    assert.equal(gridStep(160, 90, 1 << 16), 1);
    assert.equal(gridStep(1920, 1080, 1 << 16), 6);
    assert.ok(Math.ceil(1920 / 6) * Math.ceil(1080 / 6) <= 1 << 16);
    assert.equal(gridStep(3840, 2160, 1 << 14), 23);
  });

  it('framePsnr refuses frames of different geometry', () => {
    const f = (w, bitDepth) => ({ luma: new Uint8Array(w * 4), format: { width: w, height: 4, bitDepth, chroma: '420' } });
    assert.throws(() => framePsnr(f(4, 8), f(5, 8)), /4x4 8-bit against 5x4 8-bit/);
    assert.equal(framePsnr(f(4, 8), f(4, 8)), 60);
  });
});

describe('align: offset search', () => {
  const g = { width: 8, height: 8, bitDepth: 8 };
  /** A sequence whose frame i is noise seeded by content(i). */
  const seq = (count, content) =>
    range(0, count).map((i) => {
      let s = content(i) * 2654435761 + 1;
      return new Uint8Array(64).map(() => ((s = (s * 1103515245 + 12345) >>> 0) >>> 24));
    });

  it('finds o with distorted frame i = reference frame i + o, both signs', () => {
    for (const o of [-4, -1, 0, 2, 5]) {
      const ref = seq(28, (i) => i);
      const dis = seq(28, (i) => i + o);
      const r = searchOffset(ref, dis, g, { range: 6 });
      assert.equal(r.offset, o);
      assert.equal(r.psnr, 60);
      assert.ok(r.confident && r.confidence > 0.9 && !r.static);
      assert.equal(r.candidates.length, 13);
      assert.equal(r.frames, 28 - Math.abs(o));
      assert.notEqual(r.runnerUp.offset, o);
      assert.equal(r.margin, r.psnr - r.runnerUp.psnr);
      assert.equal(r.confidence, confidenceOfMargin(r.margin));
    }
  });

  it('static content: every offset alike → 0, no confidence, static', () => {
    const ref = seq(28, () => 1);
    const dis = seq(28, () => 1);
    const r = searchOffset(ref, dis, g, { range: 10 });
    assert.equal(r.offset, 0);
    assert.equal(r.confidence, 0);
    assert.equal(r.confident, false);
    assert.equal(r.static, true);
  });

  it('ties go to the smallest |offset|, then the positive one (period-2 content)', () => {
    const ref = seq(30, (i) => i % 2);
    const dis = seq(30, (i) => (i + 1) % 2); // matches offsets ±1, ±3, ...
    const r = searchOffset(ref, dis, g, { range: 4 });
    assert.equal(r.offset, 1, 'smallest |o|, the positive one');
    assert.equal(r.confidence, 0, 'offset -1 ties');
    assert.equal(searchOffset(ref, seq(30, (i) => i % 2), g, { range: 4 }).offset, 0);
  });

  it('offsets with too little overlap are not candidates', () => {
    const ref = seq(5, (i) => i);
    const dis = seq(30, (i) => i);
    const r = searchOffset(ref, dis, g, { range: 4 });
    assert.equal(r.offset, 0);
    assert.deepEqual(r.candidates.map((c) => c.offset), [-4, -3, -2, -1, 0], 'overlap >= min(8, 5)');
    assert.deepEqual(searchOffset([], dis, g, { range: 2 }).candidates, []);
  });
});

describe('align: alignPairs', () => {
  it('finds +3 (distorted starts 3 frames late) and its pairs are the aligned pairs', async () => {
    const disLate = writeClip('dis-plus3.y4m', disY4m, range(3, 48));
    const { rows, reports, warnings, ref, dis } = await runAlign(REF, disLate, { searchRange: 8 });
    assert.equal(reports.length, 1);
    const [r] = reports;
    assert.equal(r.mode, 'auto');
    assert.equal(r.offset, 3);
    assert.ok(r.confident, `margin ${r.search.margin} dB`);
    assert.ok(r.psnr > 35 && r.runnerUp.psnr < 31, `${r.psnr} vs ${r.runnerUp.psnr}`);
    assert.deepEqual(r.framesSearched, { ref: 24, dis: 24 });
    assert.equal(r.frameSkipRef, 3);
    assert.equal(r.frameSkipDist, 0);
    assert.deepEqual(warnings, []);
    assertSamePairs(rows, await alignedPairs(REF, DIS, 3, 3));
    assert.deepEqual(rows.slice(0, 2).map((p) => [p.ref, p.dis]), [[3, 0], [4, 1]], 'source frame indexes kept');
    assertAllReleased(ref, dis);
    assert.ok(ref.maxOut <= 4 && dis.maxOut <= 4, 'a pool of 4 slots never blocks the 24-frame search');
  });

  it('finds -2 (distorted starts 2 frames early) and its pairs are the aligned pairs', async () => {
    const refLate = writeClip('ref-minus2.y4m', refY4m, range(2, 48));
    const { rows, reports, ref, dis } = await runAlign(refLate, DIS);
    assert.equal(reports[0].offset, -2);
    assert.ok(reports[0].confident);
    assert.equal(reports[0].frameSkipDist, 2);
    assertSamePairs(rows, await alignedPairs(REF, DIS, 2, 2));
    assertAllReleased(ref, dis);
  });

  it('aligned inputs: offset 0, the pairs of pairFrames', async () => {
    const { rows, reports, ref, dis } = await runAlign(REF, DIS);
    assert.equal(reports[0].offset, 0);
    assert.ok(reports[0].confident);
    assert.equal(reports[0].search.candidates.length, 21);
    assertSamePairs(rows, await alignedPairs(REF, DIS, 0, 0));
    assertAllReleased(ref, dis);
  });

  it('a fixed offset skips that many frames, nothing buffered', async () => {
    const disLate = writeClip('dis-plus3.y4m', disY4m, range(3, 48));
    const { rows, reports, ref, dis } = await runAlign(REF, disLate, { mode: 3 });
    assert.deepEqual(
      reports.map((r) => [r.mode, r.offset, r.confidence, r.frameSkipRef, r.frameSkipDist]),
      [['fixed', 3, 1, 3, 0]],
    );
    assertSamePairs(rows, await alignedPairs(REF, DIS, 3, 3));
    assertAllReleased(ref, dis);
    const refLate = writeClip('ref-minus2.y4m', refY4m, range(2, 48));
    const neg = await runAlign(refLate, DIS, { mode: -2 });
    assertSamePairs(neg.rows, await alignedPairs(REF, DIS, 2, 2));
    await assert.rejects(runAlign(REF, DIS, { mode: 1.5 }), { code: 'E_USAGE' });
  });

  it('the user skips apply first, and pairFrames semantics (lengths, warnings, subsample) hold', async () => {
    // dis starts 3 late and has 30 frames: after skipping 1 of each, the offset is still +3.
    const dis30 = writeClip('dis-plus3-short.y4m', disY4m, range(3, 33));
    const { rows, reports, warnings, ref, dis } = await runAlign(REF, dis30, { frameSkipRef: 1, frameSkipDist: 1, subsample: 2 });
    assert.equal(reports[0].offset, 3);
    assert.equal(reports[0].frameSkipRef, 4);
    assert.equal(reports[0].frameSkipDist, 1);
    assert.equal(rows.length, 29);
    assert.deepEqual([rows[0].ref, rows[0].dis], [4, 1]);
    assert.deepEqual(rows.slice(0, 4).map((p) => p.scored), [true, false, true, false]);
    assertSamePairs(rows, (await alignedPairs(REF, DIS, 4, 4)).slice(0, 29));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /dis-plus3-short\.y4m ended before .*ref\.y4m: .* has 30 frames \(1 skipped\), .* has 48 \(4 skipped\)/);
    assertAllReleased(ref, dis);
  });

  it('static content: offset 0 with no confidence, not an invented offset', async () => {
    const refStill = writeClip('ref-still.y4m', refY4m, new Array(48).fill(10));
    const disStill = writeClip('dis-still.y4m', disY4m, new Array(45).fill(10));
    const { rows, reports, ref, dis } = await runAlign(refStill, disStill);
    assert.equal(reports[0].offset, 0);
    assert.equal(reports[0].confidence, 0);
    assert.equal(reports[0].confident, false);
    assert.equal(reports[0].static, true);
    assert.equal(rows.length, 45);
    assertAllReleased(ref, dis);
  });

  it('buffers at most K frames ahead, releases every frame once on an early stop', async () => {
    const disLate = writeClip('dis-plus3.y4m', disY4m, range(3, 48));
    const ref = open(REF);
    const dis = open(disLate);
    let readAtFirstPair;
    let n = 0;
    for await (const p of alignPairs(ref.source, dis.source, { searchRange: 4 })) {
      readAtFirstPair ??= [ref.stats.read, dis.stats.read];
      p.ref.release();
      p.dis.release();
      if (++n === 5) break;
    }
    await new Promise((r) => setTimeout(r, 20));
    await ref.source.close();
    await dis.source.close();
    // K = 2·4 + 8 = 16 per input, plus pairFrames' read-ahead of one pair.
    assert.ok(readAtFirstPair[0] <= 17 && readAtFirstPair[1] <= 17, `read ${readAtFirstPair}`);
    assert.ok(ref.stats.read < 48 && dis.stats.read < 45, 'stopped reading');
    assertAllReleased(ref.stats, dis.stats);
  });

  it('10-bit synthetic sources: -4 frames, -6 after the user skips 2 reference frames; every frame released once', async () => {
    const ref = new FakeSource('ref', 40, (i) => i);
    const dis = new FakeSource('dis', 40, (i) => i - 4);
    const reports = [];
    const rows = [];
    for await (const p of alignPairs(ref, dis, { searchRange: 6, frameSkipRef: 2, onReport: (r) => reports.push(r) })) {
      assert.ok(p.ref.luma instanceof Uint16Array && p.ref.luma.length === 64 * 48);
      rows.push([p.index, p.ref.index, p.dis.index]);
      p.ref.release();
      p.dis.release();
    }
    assert.equal(reports[0].offset, -6, 'dis frame i shows content i - 4 = skipped-ref frame i - 6');
    assert.equal(reports[0].psnr, 72, 'identical 10-bit pictures: the 72 dB cap');
    assert.deepEqual(reports[0].framesSearched, { ref: 20, dis: 20 });
    // ref frames 2.. (content 2..), dis frames 6.. (content 2..): 34 pairs.
    assert.deepEqual(rows[0], [0, 2, 6]);
    assert.equal(rows.length, 34);
    assert.ok(rows.every(([i, r, d]) => r === i + 2 && d === i + 6));
    ref.assertAllReleased();
    dis.assertAllReleased();
  });

  it('a read error while buffering is thrown, with every frame read released', async () => {
    const ref = new FakeSource('ref', 40, (i) => i);
    const dis = new FakeSource('dis', 40, (i) => i, 5);
    await assert.rejects(
      (async () => {
        for await (const p of alignPairs(ref, dis)) {
          p.ref.release();
          p.dis.release();
        }
      })(),
      /dis: boom at 5/,
    );
    ref.assertAllReleased();
    dis.assertAllReleased();
    assert.ok(ref.returned, 'the reference iterator was stopped');
  });

  it('K = 2N + 8, shrunk to maxBufferBytes but not below N + 8', async () => {
    const { searchFramesFor } = await import('../dist/pipeline/align.js');
    assert.equal(searchFramesFor({ width: 1920, height: 1080, bitDepth: 8 }, 10), 28);
    assert.equal(searchFramesFor({ width: 1920, height: 1080, bitDepth: 10 }, 10, undefined, 200e6), 24);
    assert.equal(searchFramesFor({ width: 1920, height: 1080, bitDepth: 10 }, 10, undefined, 100e6), 18, 'not below N + 8');
    assert.equal(searchFramesFor({ width: 3840, height: 2160, bitDepth: 10 }, 10), 18);
    assert.equal(searchFramesFor({ width: 160, height: 90, bitDepth: 8 }, 4, 12), 12);
  });

  it('an empty input is pairFrames\' E_INPUT_EMPTY', async () => {
    const empty = writeClip('empty.y4m', disY4m, []);
    await assert.rejects(runAlign(REF, empty), { code: 'E_INPUT_EMPTY' });
  });
});

describe('align: DriftMonitor', () => {
  // Distorted stream: frame 20 dropped, then the frame at 30 repeated.
  //   pairs 0-19: d0-d19 | 20-29: d21-d30 (one ahead: offset +1) | 30: d30 again | 31-47: d31-d47 (offset 0)
  const driftIndices = [...range(0, 20), ...range(21, 31), 30, ...range(31, 48)];

  async function watch(disFile, monitor, onPair, refFile = REF) {
    const ref = open(refFile);
    const dis = open(disFile);
    const pairs = pairFrames(ref.source, dis.source);
    for await (const p of monitor.watchPairs(pairs)) {
      onPair?.(p);
      p.ref.release();
      p.dis.release();
    }
    await ref.source.close();
    await dis.source.close();
    assertAllReleased(ref.stats, dis.stats);
  }

  it('psnr metric: reports the dropped frame at 20 and the repeated frame at 30', async () => {
    const file = writeClip('dis-drift.y4m', disY4m, driftIndices);
    const events = [];
    const monitor = new DriftMonitor({ metric: 'psnr', onEvent: (e) => events.push(e) });
    await watch(file, monitor);
    assert.deepEqual(
      events.map((e) => [e.kind, e.atIndex, e.offset, e.trigger]),
      [
        ['dropped', 20, 1, 'collapse'],
        ['repeated', 30, 0, 'recovery'],
      ],
    );
    assert.ok(events.every((e) => e.gain > 3 && e.analysed));
    assert.equal(monitor.offset, 0);
  });

  it('score metric: VMAF-like scores that lag the pairs by a whole clip', async () => {
    const file = writeClip('dis-drift.y4m', disY4m, driftIndices);
    const events = [];
    const monitor = new DriftMonitor({ onEvent: (e) => events.push(e) });
    const indexes = [];
    await watch(file, monitor, (p) => indexes.push(p.index));
    // Scores after every pair was observed (the rings hold 48 + the search windows).
    const results = indexes.map((i) => ({ index: i, scores: { vmaf: i >= 20 && i < 30 ? 40 + (i % 3) : 90 + (i % 4) } }));
    await lastValueFrom(from(results).pipe(monitor.watchScores((r) => r.scores.vmaf), toArray()));
    assert.deepEqual(
      events.map((e) => [e.kind, e.atIndex, e.offset, e.previousOffset, e.triggerIndex]),
      [
        ['dropped', 20, 1, 0, 22],
        ['repeated', 30, 0, 1, 32],
      ],
    );
    assert.equal(events[0].baseline, 92, 'median of the 15 normal scores before');
  });

  it('a lasting drop becomes the new normal; the repeat that ends it is still found (a rise)', async () => {
    // Pairs 10-33 one frame ahead (frame 10 dropped), the frame at 34 repeated.
    const file = writeClip('dis-long-drift.y4m', disY4m, [...range(0, 10), ...range(11, 35), 34, ...range(35, 48)]);
    const events = [];
    const monitor = new DriftMonitor({ metric: 'psnr', window: 8, onEvent: (e) => events.push(e) });
    await watch(file, monitor);
    assert.deepEqual(
      events.map((e) => [e.kind, e.atIndex, e.offset, e.trigger]),
      [
        ['dropped', 10, 1, 'collapse'],
        ['repeated', 34, 0, 'recovery'],
      ],
    );
  });

  it('a collapse the frames do not explain is a "collapse", at its start', async () => {
    const events = [];
    const monitor = new DriftMonitor({ onEvent: (e) => events.push(e) });
    await watch(DIS, monitor);
    for (let i = 0; i < 48; i++) monitor.observeScore(i, i >= 25 && i < 31 ? 50 : 95);
    monitor.end();
    assert.deepEqual(events.map((e) => [e.kind, e.atIndex, e.offset, e.analysed]), [['collapse', 25, 0, true]]);
  });

  it('aligned and static inputs report nothing', async () => {
    const still = [writeClip('ref-still-48.y4m', refY4m, new Array(48).fill(10)), writeClip('dis-still-48.y4m', disY4m, new Array(48).fill(10))];
    for (const [refFile, disFile] of [[REF, DIS], still]) {
      const events = [];
      const monitor = new DriftMonitor({ metric: 'psnr', onEvent: (e) => events.push(e) });
      await watch(disFile, monitor, undefined, refFile);
      assert.deepEqual(events, []);
    }
  });

  it('bounded: the rings hold maxLag + search windows; frames gone are reported unanalysed', async () => {
    // 96 pairs: the drifting clip, then the aligned clip again; scores only after all of them.
    const refFile = writeClip('ref-twice.y4m', refY4m, [...range(0, 48), ...range(0, 48)]);
    const disFile = writeClip('dis-drift-then-aligned.y4m', disY4m, [...driftIndices, ...range(0, 48)]);
    const events = [];
    const monitor = new DriftMonitor({ maxLag: 0, onEvent: (e) => events.push(e) });
    assert.equal(monitor.historySize, 0 + 3 + 8 + 8 + 2 * 2 + 8);
    await watch(disFile, monitor, undefined, refFile);
    for (let i = 0; i < 96; i++) monitor.observeScore(i, i >= 20 && i < 30 ? 40 : 90);
    monitor.end();
    // Pair 20's neighbourhood left the 31-thumbnail rings long before its scores came.
    assert.deepEqual(events.map((e) => [e.kind, e.atIndex, e.analysed]), [['collapse', 20, false]]);
  });

  it('real VMAF (cpu backend, vmaf_v0.6.1) with the default thresholds', async function () {
    let backend;
    let model;
    try {
      const { createBackend } = await import('../dist/kernels/create-backend.js');
      const { loadModel, parseModelSpec } = await import('../dist/pipeline/model/index.js');
      backend = await createBackend('cpu', { threads: 4 });
      model = await loadModel(parseModelSpec('version=vmaf_v0.6.1:name=vmaf'));
    } catch (err) {
      this.skip(`cpu backend unavailable: ${err.message}`);
    }
    const file = writeClip('dis-drift.y4m', disY4m, driftIndices);
    const events = [];
    const monitor = new DriftMonitor({ onEvent: (e) => events.push(e) });
    const ref = open(REF);
    const dis = open(file);
    try {
      const vmaf = await lastValueFrom(
        backend.extract(from(monitor.watchPairs(pairFrames(ref.source, dis.source)))).pipe(
          map((f) => ({ index: f.index, vmaf: model.predict(f.features).vmaf })),
          monitor.watchScores((r) => r.vmaf),
          toArray(),
        ),
      );
      // One frame off costs this clip ~15 VMAF points: ~92 → 72-81.
      const mean = (a) => a.reduce((x, y) => x + y.vmaf, 0) / a.length;
      assert.ok(mean(vmaf.slice(20, 30)) < 82 && mean(vmaf.slice(0, 20)) > 88, 'the misaligned frames score lower');
    } finally {
      await backend.close();
      await ref.source.close();
      await dis.source.close();
    }
    assert.deepEqual(
      events.map((e) => [e.kind, e.atIndex, e.offset]),
      [
        ['dropped', 20, 1],
        ['repeated', 30, 0],
      ],
    );
    assertAllReleased(ref.stats, dis.stats);
  });

  it('fed through alignPairs: the monitor sees the aligned pairs', async () => {
    // dis starts 3 late AND drops a frame at 20: alignPairs fixes the start, the monitor finds the drop.
    const indices = [...range(3, 23), ...range(24, 48)];
    const file = writeClip('dis-plus3-drop.y4m', disY4m, indices);
    const events = [];
    const reports = [];
    const monitor = new DriftMonitor({ metric: 'psnr', onEvent: (e) => events.push(e) });
    const ref = open(REF);
    const dis = open(file);
    for await (const p of monitor.watchPairs(alignPairs(ref.source, dis.source, { onReport: (r) => reports.push(r) }))) {
      p.ref.release();
      p.dis.release();
    }
    await ref.source.close();
    await dis.source.close();
    assert.equal(reports[0].offset, 3);
    assert.deepEqual(events.map((e) => [e.kind, e.atIndex, e.offset]), [['dropped', 20, 1]]);
    assertAllReleased(ref.stats, dis.stats);
  });
});
