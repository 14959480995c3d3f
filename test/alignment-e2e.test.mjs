// Alignment end to end, through the command line and the library: --align auto finds the
// offset of a distorted clip that starts a few frames late (or early), says so on stderr, in
// the NDJSON log and as an `alignment` event, and scores exactly what the equivalent
// --frame_skip_ref / --frame_skip_dist run scores, bit for bit; --align N applies N; in a
// ladder each rendition gets its own offset; and the drift monitor, on with alignment (or
// --drift), reports a frame the distorted stream drops, and costs nothing when off.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scoreEvents, scoreLadderEvents } from '../dist/index.js';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { range, readY4m, writeY4m } from './helpers/y4m.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const clip = goldenClip('src01_160x90_8bit');
const REF = clip.ref;
const DIS = clip.dis;
const BASE = ['--backend', 'cpu', '--threads', '2', '--ndjson', '-o', '-', '--precision', '17', '-q'];

function cli(args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `vmaf-stream ${args.join(' ')}: ${r.stderr}`);
  const lines = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
  return { stderr: r.stderr, lines, frames: lines.filter((l) => 'frameNum' in l), typed: (type) => lines.filter((l) => l.type === type) };
}

/** The frames of one rendition (or of a single run) as [frameNum, metrics]. */
const metricsOf = (frames, rendition) => frames.filter((f) => f.rendition === rendition).map((f) => [f.frameNum, f.metrics]);

function events(emitter) {
  const seen = [];
  return new Promise((resolve, reject) => {
    for (const type of ['frame', 'alignment', 'drift', 'window', 'alert']) emitter.on(type, (value) => seen.push({ type, value }));
    emitter.on('end', () => resolve(seen));
    emitter.on('error', reject);
  });
}

describe('alignment end to end', function () {
  let tmp;
  let late3;
  let early2;
  let dropped;
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'vmaf-align-e2e-'));
    const dis = readY4m(DIS);
    // Distorted frame i shows reference frame i + 3: the first three frames are missing.
    late3 = writeY4m(join(tmp, 'late3.y4m'), dis, range(3, 48));
    // Distorted frame i shows reference frame i − 2: two frames of other content come first.
    early2 = writeY4m(join(tmp, 'early2.y4m'), dis, [40, 44, ...range(0, 46)]);
    // Frame 20 dropped: from pair 20 on, distorted frame i shows reference frame i + 1.
    dropped = writeY4m(join(tmp, 'dropped.y4m'), dis, [...range(0, 20), ...range(21, 48)]);
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('--align auto finds +3, says so, and scores what --frame_skip_ref 3 scores, bit for bit', () => {
    const aligned = cli(['-r', REF, '-d', late3, '--align', 'auto', ...BASE]);
    assert.match(aligned.stderr, /aligned at offset \+3: distorted frame i is scored against reference frame i\+3 \(skipping 3 reference frames and 0 distorted\), found by luma PSNR over ±10 frames/);
    const [line] = aligned.typed('alignment');
    assert.deepEqual(
      { mode: line.mode, offset: line.offset, frameSkipRef: line.frameSkipRef, frameSkipDist: line.frameSkipDist, confident: line.confident, static: line.static },
      { mode: 'auto', offset: 3, frameSkipRef: 3, frameSkipDist: 0, confident: true, static: false },
    );
    assert.equal(line.rendition, undefined, 'a single pair: no rendition');
    assert.ok(line.psnr > 30 && line.runnerUp.psnr < line.psnr, JSON.stringify(line));
    assert.ok(aligned.lines.indexOf(line) < aligned.lines.indexOf(aligned.frames[0]), 'the alignment line comes before the first frame');

    const skipped = cli(['-r', REF, '-d', late3, '--frame_skip_ref', '3', ...BASE]);
    assert.equal(aligned.frames.length, 45);
    assert.deepEqual(metricsOf(aligned.frames), metricsOf(skipped.frames));
    // And the scores are the original pair's from frame 3 on (but the first frame's, whose
    // motion has no previous frame): the offset found is the right one.
    const original = cli(['-r', REF, '-d', DIS, ...BASE]);
    assert.deepEqual(aligned.frames.slice(1).map((f) => f.metrics.vmaf), original.frames.slice(4).map((f) => f.metrics.vmaf));
  });

  it('--align 3 (fixed) gives the same scores, reported as given', () => {
    const fixed = cli(['-r', REF, '-d', late3, '--align', '3', ...BASE]);
    assert.match(fixed.stderr, /aligned at offset \+3: .*\(skipping 3 reference frames and 0 distorted\), as given/);
    const [line] = fixed.typed('alignment');
    assert.deepEqual([line.mode, line.offset, line.frameSkipRef, line.frameSkipDist, line.confidence], ['fixed', 3, 3, 0, 1]);
    const skipped = cli(['-r', REF, '-d', late3, '--frame_skip_ref', '3', ...BASE]);
    assert.deepEqual(metricsOf(fixed.frames), metricsOf(skipped.frames));
  });

  it('a negative offset: --align auto finds -2, as --frame_skip_dist 2', () => {
    const aligned = cli(['-r', REF, '-d', early2, '--align', 'auto', '--align-range', '4', ...BASE]);
    assert.match(aligned.stderr, /aligned at offset -2: distorted frame i is scored against reference frame i-2 \(skipping 0 reference frames and 2 distorted\), found by luma PSNR over ±4 frames/);
    assert.deepEqual(aligned.typed('alignment').map((l) => [l.offset, l.frameSkipRef, l.frameSkipDist]), [[-2, 0, 2]]);
    const skipped = cli(['-r', REF, '-d', early2, '--frame_skip_dist', '2', ...BASE]);
    assert.deepEqual(metricsOf(aligned.frames), metricsOf(skipped.frames));
  });

  it('a ladder: each rendition its own offset; the reference skips the largest, each rendition the rest', () => {
    const ladder = cli(['-r', REF, '-d', `name=late:path=${late3}`, '-d', `name=early:path=${early2}`, '-d', `name=aligned:path=${DIS}`, '--align', 'auto', ...BASE]);
    const lines = Object.fromEntries(ladder.typed('alignment').map((l) => [l.rendition, [l.offset, l.frameSkipRef, l.frameSkipDist]]));
    // The reference skips 3 (the late rendition's offset); early must then skip 3 + 2, aligned 3.
    assert.deepEqual(lines, { late: [3, 3, 0], early: [-2, 3, 5], aligned: [0, 3, 3] });
    for (const name of ['late', 'early', 'aligned']) assert.match(ladder.stderr, new RegExp(`^vmaf-stream: ${name}: aligned at offset`, 'm'));
    // Each rendition scores what its own single-pair run with those skips scores.
    const inputs = { late: late3, early: early2, aligned: DIS };
    for (const [name, [, skipRef, skipDist]] of Object.entries(lines)) {
      const single = cli(['-r', REF, '-d', inputs[name], '--frame_skip_ref', String(skipRef), '--frame_skip_dist', String(skipDist), ...BASE]);
      assert.deepEqual(metricsOf(ladder.frames, name), metricsOf(single.frames), name);
    }
  });

  it('-d align= sets one rendition\'s alignment; the others are not aligned', () => {
    const ladder = cli(['-r', REF, '-d', `name=late:align=3:path=${late3}`, '-d', `name=plain:path=${DIS}`, ...BASE]);
    assert.deepEqual(ladder.typed('alignment').map((l) => [l.rendition, l.mode, l.offset, l.frameSkipRef, l.frameSkipDist]), [['late', 'fixed', 3, 3, 0]]);
    const plain = cli(['-r', REF, '-d', DIS, '--frame_skip_ref', '3', '--frame_skip_dist', '3', ...BASE]);
    assert.deepEqual(metricsOf(ladder.frames, 'plain'), metricsOf(plain.frames));
  });

  it('bad --align values are usage errors', () => {
    for (const args of [['--align', 'maybe'], ['--align', '1.5'], ['--align-range', '4'], ['--align', 'auto', '--align-range', '-1']]) {
      const r = spawnSync(process.execPath, [BIN, '-r', REF, '-d', DIS, ...args], { encoding: 'utf8' });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /--align/);
    }
  });

  it('the drift monitor reports the dropped frame with its position: stderr, NDJSON, `drift` event', async () => {
    const run = cli(['-r', REF, '-d', dropped, '--drift', ...BASE]);
    const drift = run.typed('drift').filter((l) => l.kind !== 'collapse');
    assert.deepEqual(drift.map((l) => [l.kind, l.atIndex, l.offset, l.previousOffset]), [['dropped', 20, 1, 0]]);
    assert.match(run.stderr, /^vmaf-stream: the distorted stream dropped a frame at frame 20: from there it shows the reference one frame later \(offset \+1\)$/m);

    const seen = await events(scoreEvents(REF, dropped, { backend: 'cpu', threads: 2, align: 0 }));
    const driftEvents = seen.filter((e) => e.type === 'drift' && e.value.kind !== 'collapse').map((e) => e.value);
    assert.deepEqual(driftEvents.map((d) => [d.kind, d.atIndex, d.offset, d.rendition]), [['dropped', 20, 1, undefined]]);
    // Reported once the frames after the drop have been scored, not at the end.
    const at = seen.findIndex((e) => e.type === 'drift' && e.value.kind === 'dropped');
    const framesBefore = seen.slice(0, at).filter((e) => e.type === 'frame').length;
    assert.ok(framesBefore > 20 && framesBefore < 47, `the drop was reported after ${framesBefore} frames`);
  });

  it('drift: false turns the monitor off', async () => {
    const seen = await events(scoreEvents(REF, dropped, { backend: 'cpu', threads: 2, drift: false }));
    assert.equal(seen.filter((e) => e.type === 'drift').length, 0);
    assert.equal(seen.filter((e) => e.type === 'frame').length, 47);
  });

  it('the gpu backend: alignment and drift on the same frames, the same scores as the cpu backend', function () {
    if (!backendsUnderTest().includes('gpu')) this.skip();
    const args = ['-r', REF, '-d', `name=late:path=${late3}`, '-d', `name=dropped:path=${dropped}`, '--align', 'auto', '--align-range', '4', '--frame_cnt', '30', ...BASE];
    const cpu = cli(args);
    const gpu = cli([...args, '--backend', 'gpu']);
    assert.deepEqual(gpu.typed('alignment'), cpu.typed('alignment'));
    assert.deepEqual(gpu.typed('drift').map((d) => [d.rendition, d.kind, d.atIndex]), cpu.typed('drift').map((d) => [d.rendition, d.kind, d.atIndex]));
    assert.ok(cpu.typed('drift').some((d) => d.rendition === 'dropped' && d.kind === 'dropped' && d.atIndex === 17), 'the drop, 3 frames earlier after the reference skips 3');
    assert.deepEqual(gpu.frames, cpu.frames);
  });

  it('the library: `alignment` events (ladder, per rendition) before the first frame, and scores as the CLI', async () => {
    const seen = await events(
      scoreLadderEvents(REF, [{ input: late3, name: 'late' }, { input: DIS, name: 'aligned' }], { backend: 'cpu', threads: 2, align: 'auto', alignRange: 5, models: ['version=vmaf_v0.6.1:name=vmaf'] }),
    );
    const alignments = seen.filter((e) => e.type === 'alignment').map((e) => e.value);
    assert.deepEqual(alignments.map((a) => [a.rendition, a.mode, a.offset, a.frameSkipRef, a.frameSkipDist]), [['late', 'auto', 3, 3, 0], ['aligned', 'auto', 0, 3, 3]]);
    assert.ok(alignments[0].search.candidates.length === 11, 'the full search is in the event');
    assert.ok(seen.findIndex((e) => e.type === 'frame') > seen.findLastIndex((e) => e.type === 'alignment'));
    const single = await events(scoreEvents(REF, late3, { backend: 'cpu', threads: 2, align: 3, models: ['version=vmaf_v0.6.1:name=vmaf'] }));
    assert.deepEqual(
      seen.filter((e) => e.type === 'frame' && e.value.rendition === 'late').map((e) => e.value.result.scores.vmaf),
      single.filter((e) => e.type === 'frame').map((e) => e.value.scores.vmaf),
    );
    assert.deepEqual(single.filter((e) => e.type === 'alignment').map((e) => [e.value.mode, e.value.offset, e.value.rendition]), [['fixed', 3, undefined]]);
  });
});
