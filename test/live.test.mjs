// Live input: the reference comes through a named pipe (mkfifo), frame by frame, from a
// writer that pauses between frames. Results for early frames come out while the writer
// is still writing (one frame after each frame arrives), through the library (a ladder)
// and the command line; with a slow consumer the writer is held back, so memory stays
// bounded (the frame pool and the credits), however long the live input.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { score, scoreIterator, scoreLadder } from '../dist/index.js';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const WRITER = fileURLToPath(new URL('./helpers/fifo-writer.mjs', import.meta.url));
const clip = goldenClip('src01_160x90_8bit');
const REF = clip.ref;
const DIS = clip.dis;
const MODEL = 'version=vmaf_v0.6.1:name=vmaf';
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-live-'));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let fifos = 0;
function mkfifo() {
  const path = join(tmp, `live-${fifos++}`); // no extension: the reader sniffs the stream
  const r = spawnSync('mkfifo', [path]);
  assert.equal(r.status, 0, `mkfifo: ${r.stderr}`);
  return path;
}

/** Starts fifo-writer.mjs; tracks when each frame was written and when the pipe was closed. */
function startWriter(path, args) {
  const child = spawn(process.execPath, [WRITER, path, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const state = { wroteAt: [], lastWritten: -1, closedAt: undefined, exited: undefined };
  state.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const now = performance.now();
    if (line === 'closed') {
      state.closedAt = now;
    } else {
      const i = Number(line.split(' ')[1]);
      state.wroteAt[i] = now;
      state.lastWritten = i;
    }
  });
  return state;
}

describe('live input through a named pipe', function () {
  it('a ladder scores each frame while the writer is still writing, one frame after it arrives', async function () {
    const fifo = mkfifo();
    const frames = 16;
    const writer = startWriter(fifo, ['file', REF, String(frames), '150']);
    const arrivals = [];
    const warnings = [];
    const options = { backend: 'cpu', threads: 2, models: [MODEL] };
    const results = await lastValueFrom(
      scoreLadder(fifo, [{ input: DIS, name: 'a' }, { input: DIS, name: 'b' }], { ...options, onWarning: (m) => warnings.push(m) }).pipe(
        tap((r) => arrivals.push({ name: r.rendition, index: r.result.index, at: performance.now() })),
        toArray(),
      ),
    );
    assert.equal(await writer.exited, 0);
    assert.equal(results.length, 2 * frames);
    assert.ok(writer.closedAt !== undefined);
    for (const { name, index, at } of arrivals) {
      // Frame i is scored once frame i + 1 has arrived (integer_motion2 looks one ahead):
      // before frame i + 5 is written, 600 ms later (an order of events, with room for a
      // loaded machine; the latency itself is measured in the bench).
      if (index + 5 < frames) assert.ok(at < writer.wroteAt[index + 5], `${name} frame ${index}: its result came ${(at - writer.wroteAt[index]).toFixed(0)} ms after the frame, after frame ${index + 5} was written`);
      if (index < frames - 2) assert.ok(at < writer.closedAt, `${name} frame ${index}: its result came after the writer closed the pipe`);
    }
    // The same scores as the file read at once: the pipe changes nothing but the timing.
    const offline = await lastValueFrom(score(REF, DIS, { ...options, frameCnt: frames }).pipe(toArray()));
    for (const name of ['a', 'b']) {
      const got = results.filter((r) => r.rendition === name).map((r) => r.result);
      assert.deepEqual(got.map((r) => r.scores.vmaf), offline.map((r) => r.scores.vmaf));
      assert.deepEqual(got.map((r) => r.features), offline.map((r) => r.features));
    }
    // A live input is not read to its end just to count it (a live input may not end).
    assert.ok(warnings.some((m) => /ended before .*dis\.y4m has more than 16/.test(m)), warnings.join('\n'));
  });

  it('memory stays bounded: a slow consumer holds the writer back (frame pool and credits)', async function () {
    // 640x360 frames (345 KB): the pipe, the reader's buffer and the pool hold a few at most.
    const frames = 80;
    const dis = join(tmp, 'dis-640x360.y4m');
    const made = startWriter(dis, ['synth', '640x360', String(frames), '0']);
    assert.equal(await made.exited, 0);
    const fifo = mkfifo();
    const writer = startWriter(fifo, ['synth', '640x360', String(frames), '0']);
    let maxAhead = 0;
    let consumed = 0;
    let writtenWhenHalfConsumed;
    for await (const result of scoreIterator(fifo, dis, { backend: 'cpu', threads: 2, maxFramesInFlight: 4, models: [MODEL] })) {
      assert.equal(result.index, consumed);
      maxAhead = Math.max(maxAhead, writer.lastWritten - result.index);
      consumed++;
      if (consumed === frames / 2) writtenWhenHalfConsumed = writer.lastWritten + 1;
      await sleep(20); // a slow consumer
    }
    assert.equal(await writer.exited, 0);
    assert.equal(consumed, frames);
    assert.ok(maxAhead <= 24, `the writer got ${maxAhead} frames ahead of the consumer`);
    assert.ok(writtenWhenHalfConsumed < frames, `the writer was not held back: all ${frames} frames written when the consumer had taken ${frames / 2}`);
  });

  it('the command line streams NDJSON lines while the live reference is still being written', async function () {
    const fifo = mkfifo();
    const frames = 12;
    const cli = spawn(process.execPath, [BIN, '-r', fifo, '-d', DIS, '--backend', 'cpu', '--threads', '2', '--ndjson', '-o', '-', '-q'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    cli.stderr.on('data', (chunk) => (stderr += chunk));
    const lines = [];
    createInterface({ input: cli.stdout }).on('line', (line) => lines.push({ line: JSON.parse(line), at: performance.now() }));
    const exited = new Promise((resolve) => cli.on('exit', resolve));
    const writer = startWriter(fifo, ['file', REF, String(frames), '200']);
    assert.equal(await exited, 0, stderr);
    assert.equal(await writer.exited, 0);
    const frameLines = lines.filter((l) => 'frameNum' in l.line);
    assert.deepEqual(frameLines.map((l) => l.line.frameNum), [...Array(frames).keys()]);
    for (const { line, at } of frameLines) {
      if (line.frameNum < frames - 2) assert.ok(at < writer.closedAt, `frame ${line.frameNum}: its line came after the writer closed the pipe`);
    }
    assert.ok(frameLines[0].at < writer.wroteAt[4], 'the first line came within a few frames of the first frame');
  });
});
