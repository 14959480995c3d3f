// The host path's economies (issue 9): regular files are read by descriptor straight into
// the pool slots (FileByteReader) and give exactly the frames and errors the stream reader
// gives, whatever the chunking and wherever the input is cut; a stream's reader stays
// bounded on an endless input; the drift monitor takes no thumbnail unless alignment (or
// drift) was asked for.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { scoreEvents } from '../dist/index.js';
import { Y4mReader } from '../dist/decode/y4m-reader.js';
import { RawReader } from '../dist/decode/raw-reader.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { RunQc } from '../dist/pipeline/qc.js';
import { goldenClip } from './helpers/golden.mjs';
import { range, readY4m, writeY4m } from './helpers/y4m.mjs';

let tmp;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vmaf-host-path-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Deterministic bytes: every sample differs from its neighbours, and planes differ. */
function pattern(n, seed) {
  const buf = Buffer.alloc(n);
  for (let i = 0; i < n; i++) buf[i] = (i * 37 + seed * 101 + (i >> 5)) & 0xff;
  return buf;
}

/** A y4m of `frames` 7x5 frames (4:2:0: 35 + 2·12 bytes), FRAME lines with parameters on odd frames. */
function y4m({ header = 'YUV4MPEG2 W7 H5 F25:1 Ip A1:1 C420jpeg XCOLORRANGE=FULL', frames = 3, bits = 8 } = {}) {
  const bps = bits > 8 ? 2 : 1;
  const parts = [Buffer.from(`${header}\n`)];
  for (let f = 0; f < frames; f++) {
    parts.push(Buffer.from(f % 2 ? 'FRAME Ip XNOTE=some-frame-parameters\n' : 'FRAME\n'), pattern(59 * bps, f + 1));
  }
  return Buffer.concat(parts);
}

/** A Readable delivering `buf` in chunks of `size` bytes. */
function chunked(buf, size) {
  const parts = [];
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size));
  return Readable.from(parts, { objectMode: false });
}

/** Every frame's planes (copied) and the error, if any: what a reader gives. */
async function outcome(source) {
  const frames = [];
  let error;
  try {
    for await (const f of source) {
      frames.push([f.index, f.pts, Buffer.from(f.luma.buffer, f.luma.byteOffset, f.luma.byteLength).toString('hex'), f.chroma?.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('hex'))]);
      f.release();
    }
  } catch (e) {
    error = `${e.code}: ${e.message}`;
    if (process.env.DBG && e.cause) console.log(e.cause.stack);
  } finally {
    await source.close();
  }
  return { frames, error };
}

describe('host path: reading files by descriptor', function () {
  this.timeout(120000);

  it('a y4m file gives the frames and errors of the stream reader, cut anywhere, any chunking, either planes', async () => {
    const whole = y4m();
    for (const planes of ['luma', 'all']) {
      for (let cut = 0; cut <= whole.length; cut++) {
        const buf = whole.subarray(0, cut);
        const file = path.join(tmp, `cut-${cut}.y4m`);
        fs.writeFileSync(file, buf);
        const fromFile = await outcome(new Y4mReader({ file }, { label: 'clip.y4m', planes }));
        const fromStream = await outcome(new Y4mReader(chunked(buf, 1 + (cut % 7)), { label: 'clip.y4m', planes }));
        assert.deepEqual(fromFile, fromStream, `cut at byte ${cut}, planes ${planes}`);
        fs.rmSync(file);
      }
    }
    // The whole clip: three frames, and each plane is where the file has it.
    const file = path.join(tmp, 'whole.y4m');
    fs.writeFileSync(file, whole);
    const { frames, error } = await outcome(openFrameSource(file, { planes: 'all' }));
    assert.equal(error, undefined);
    assert.deepEqual(frames.map((f) => f[0]), [0, 1, 2]);
    assert.equal(frames[1][2], pattern(59, 2).subarray(0, 35).toString('hex'));
    assert.deepEqual(frames[1][3], [pattern(59, 2).subarray(35, 47).toString('hex'), pattern(59, 2).subarray(47, 59).toString('hex')]);
  });

  it('16-bit samples and a long header read alike from a file and a 1-byte-chunk stream', async () => {
    const long = `YUV4MPEG2 W7 H5 F30000:1001 C420p10 X${'a'.repeat(1000)}`;
    const buf = y4m({ header: long, frames: 4, bits: 10 });
    const file = path.join(tmp, 'ten.y4m');
    fs.writeFileSync(file, buf);
    for (const planes of ['luma', 'all']) {
      const fromFile = await outcome(new Y4mReader({ file }, { label: 'ten', planes }));
      assert.equal(fromFile.error, undefined);
      assert.equal(fromFile.frames.length, 4);
      assert.deepEqual(fromFile, await outcome(new Y4mReader(chunked(buf, 1), { label: 'ten', planes })));
    }
  });

  it('a raw file: the same frames as the stream, a cut last frame the same error', async () => {
    const frame = 59;
    const whole = Buffer.concat([pattern(frame, 1), pattern(frame, 2), pattern(frame, 3)]);
    for (const cut of [whole.length, whole.length - 1, whole.length - 24, whole.length - 40, frame, 1]) {
      const buf = whole.subarray(0, cut);
      const file = path.join(tmp, 'clip.yuv');
      fs.writeFileSync(file, buf);
      for (const planes of ['luma', 'all']) {
        const geometry = { width: 7, height: 5, fps: 10, label: 'clip.yuv', planes };
        assert.deepEqual(await outcome(new RawReader({ file }, geometry)), await outcome(new RawReader(chunked(buf, 5), geometry)), `cut ${cut}, ${planes}`);
      }
    }
  });

  it('a missing file: E_INPUT_NOT_FOUND naming it, as before', async () => {
    const { error } = await outcome(new Y4mReader({ file: path.join(tmp, 'nope.y4m') }, { label: 'nope.y4m' }));
    assert.match(error, /^E_INPUT_NOT_FOUND: nope\.y4m: no such file/);
  });

  it('a named pipe is read as it comes, its chroma dropped as read', async function () {
    if (process.platform === 'win32') this.skip();
    const fifo = path.join(tmp, 'pipe.y4m');
    execFileSync('mkfifo', [fifo]);
    const buf = y4m({ frames: 5 });
    const writer = fs.promises.writeFile(fifo, buf);
    const fromFifo = await outcome(new Y4mReader({ file: fifo }, { label: 'pipe' }));
    await writer;
    assert.deepEqual(fromFifo, await outcome(new Y4mReader(chunked(buf, 64), { label: 'pipe' })));
    assert.equal(fromFifo.frames.length, 5);
  });
});

describe('host path: a stream reader stays bounded on an endless input', function () {
  this.timeout(120000);

  it('reads ahead at most its high-water mark, however long the input and however slow the consumer', async () => {
    const header = Buffer.from('YUV4MPEG2 W64 H48 F25:1 C420jpeg\n');
    const frame = Buffer.concat([Buffer.from('FRAME\n'), pattern(64 * 48 * 1.5, 7)]);
    let produced = 0;
    let endless = true;
    const stream = new Readable({
      highWaterMark: 16 * 1024,
      read() {
        if (!endless) return this.push(null);
        const chunk = produced === 0 ? Buffer.concat([header, frame]) : frame;
        produced += chunk.length;
        this.push(chunk);
      },
    });
    const highWaterMark = 64 * 1024;
    const source = new Y4mReader(stream, { label: 'endless', highWaterMark, poolSlots: 2 });
    const iterator = source[Symbol.asyncIterator]();
    let consumed = header.length;
    for (let i = 0; i < 300; i++) {
      const { value } = await iterator.next();
      value.release();
      consumed += frame.length;
      // Let the producer run as far as it will before the next frame is asked for.
      for (let k = 0; k < 20; k++) await new Promise((resolve) => setImmediate(resolve));
      const ahead = produced - consumed;
      assert.ok(ahead <= highWaterMark + 16 * 1024 + 2 * frame.length, `${ahead} bytes read ahead after frame ${i}`);
    }
    endless = false;
    await source.close();
  });
});

describe('host path: the drift monitor costs nothing unless asked for', function () {
  this.timeout(300000);
  const clip = goldenClip('src01_160x90_8bit');

  function groups(n) {
    const format = { width: 64, height: 48, bitDepth: 8, chroma: '420' };
    const frame = (index, seed) => ({ index, format, luma: pattern(64 * 48, seed), release() {} });
    return range(0, n).map((i) => ({ index: i, ref: frame(i, i), dis: [frame(i, i + 1)] }));
  }
  const setup = (aligned) => ({ names: ['dis'], single: true, modelNames: ['vmaf'], inFlight: 4, aligned: [aligned] });

  it('no alignment, no drift option: no monitor, no thumbnail', () => {
    const qc = new RunQc({}, setup(false));
    for (const g of groups(40)) qc.observeGroup(g);
    assert.equal(qc.driftMonitors, 0);
    assert.equal(qc.thumbnailsTaken, 0);
  });

  it('aligned, or drift: true: a monitor, two thumbnails a pair; drift: false wins over alignment', () => {
    for (const [options, aligned] of [[{}, true], [{ drift: true }, false], [{ drift: { window: 5 } }, false]]) {
      const qc = new RunQc(options, setup(aligned));
      for (const g of groups(40)) qc.observeGroup(g);
      assert.equal(qc.driftMonitors, 1);
      assert.equal(qc.thumbnailsTaken, 80);
    }
    const off = new RunQc({ drift: false }, setup(true));
    for (const g of groups(40)) off.observeGroup(g);
    assert.equal(off.thumbnailsTaken, 0);
  });

  it('end to end: a dropped frame is reported with alignment or drift: true, and not looked for otherwise', async () => {
    const dis = readY4m(clip.dis);
    const dropped = writeY4m(path.join(tmp, 'dropped.y4m'), dis, [...range(0, 20), ...range(21, 48)]);
    const run = (options) =>
      new Promise((resolve, reject) => {
        const seen = { frames: [], drift: [] };
        const emitter = scoreEvents(clip.ref, dropped, { backend: 'cpu', threads: 2, ...options });
        emitter.on('frame', (f) => seen.frames.push(f.scores.vmaf));
        emitter.on('drift', (d) => seen.drift.push([d.kind, d.atIndex]));
        emitter.on('end', () => resolve(seen));
        emitter.on('error', reject);
      });
    const plain = await run({});
    const watched = await run({ drift: true });
    const aligned = await run({ align: 0 });
    assert.deepEqual(plain.drift, []);
    assert.deepEqual(watched.drift.filter(([kind]) => kind !== 'collapse'), [['dropped', 20]]);
    assert.deepEqual(aligned.drift.filter(([kind]) => kind !== 'collapse'), [['dropped', 20]]);
    // Watching changes no score.
    assert.equal(plain.frames.length, 47);
    assert.deepEqual(watched.frames, plain.frames);
    assert.deepEqual(aligned.frames, plain.frames);
  });
});
