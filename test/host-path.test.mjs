// The host path's economies (issue 9): regular files are read by descriptor straight into
// the pool slots (FileByteReader) and give exactly the frames and errors the stream reader
// gives, whatever the chunking and wherever the input is cut; a gpu run's file frames come
// located and their planes are read once, from the file into staging memory, with the same
// values and errors; a stream's reader stays bounded on an endless input; the drift monitor
// takes no thumbnail unless alignment (or drift) was asked for.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { scoreEvents } from '../dist/index.js';
import { Y4mReader } from '../dist/decode/y4m-reader.js';
import { RawReader } from '../dist/decode/raw-reader.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { RunQc } from '../dist/pipeline/qc.js';
import { LocatedFileReader, locateFrames } from '../dist/decode/located-frames.js';
import { backendsUnderTest } from './helpers/env.mjs';
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

/** Every frame of a located source, each plane read back through LocatedFileReader (hex), and the error: `outcome`'s shape. */
async function locatedOutcome(source, planes) {
  const reader = new LocatedFileReader();
  const frames = [];
  let error;
  try {
    locateFrames(source);
    for await (const f of source) {
      assert.ok(f.located, `frame ${f.index} is located`);
      assert.equal(f.luma.length, 0);
      assert.equal(f.chroma?.length, planes === 'all' ? 2 : undefined);
      const bps = f.format.bitDepth > 8 ? 2 : 1;
      const c = { width: Math.ceil(f.format.width / 2), height: Math.ceil(f.format.height / 2) };
      const read = async (p, samples) => {
        const dst = new Uint8Array(samples * bps);
        await reader.readPlane(f.located, f.format, p, f.index, dst);
        return Buffer.from(dst).toString('hex');
      };
      const luma = await read(0, f.format.width * f.format.height);
      const chroma = planes === 'all' ? [await read(1, c.width * c.height), await read(2, c.width * c.height)] : undefined;
      frames.push([f.index, f.pts, luma, chroma]);
      f.release();
    }
  } catch (e) {
    error = `${e.code}: ${e.message}`;
  } finally {
    await source.close();
    await reader.close();
  }
  return { frames, error };
}

describe('host path: located frames (a gpu run reads the planes once, from the file)', function () {
  this.timeout(300000);

  it("a y4m file's frames come located, each plane where the reader would have read it: 8 and 16 bits, FRAME parameters, cut anywhere", async () => {
    for (const bits of [8, 10]) {
      const whole = y4m({ header: `YUV4MPEG2 W7 H5 F25:1 C420${bits > 8 ? 'p10' : 'jpeg'}`, frames: 4, bits });
      for (const planes of ['luma', 'all']) {
        for (let cut = 0; cut <= whole.length; cut += bits > 8 ? 7 : 1) {
          const file = path.join(tmp, `located-${bits}-${cut}.y4m`);
          fs.writeFileSync(file, whole.subarray(0, cut));
          const located = await locatedOutcome(new Y4mReader({ file }, { label: 'clip.y4m', planes }), planes);
          const read = await outcome(new Y4mReader({ file }, { label: 'clip.y4m', planes }));
          assert.deepEqual(located, read, `${bits} bits, cut at byte ${cut}, planes ${planes}`);
          fs.rmSync(file);
        }
      }
    }
  });

  it("a segment of a queued run (a reader from a frame's byte offset, its header known): located where it would have read", async () => {
    const header = 'YUV4MPEG2 W7 H5 F25:1 C420jpeg';
    const whole = Buffer.concat([Buffer.from(`${header}\n`), ...range(0, 5).map((f) => Buffer.concat([Buffer.from('FRAME\n'), pattern(59, f + 1)]))]);
    const file = path.join(tmp, 'segment.y4m');
    fs.writeFileSync(file, whole);
    for (const planes of ['luma', 'all']) {
      const at = (frame) => new Y4mReader({ file, start: header.length + 1 + frame * 65 }, { label: 'segment.y4m', planes, firstIndex: frame, knownHeader: `${header}\n` });
      const located = await locatedOutcome(at(2), planes);
      assert.deepEqual(located.frames.map((f) => f[0]), [2, 3, 4]);
      assert.deepEqual(located, await outcome(at(2)), planes);
    }
  });

  it('a raw file too; a stream is read as before (its frames carry their planes)', async () => {
    const whole = Buffer.concat([pattern(59, 1), pattern(59, 2), pattern(59, 3)]);
    const file = path.join(tmp, 'located.yuv');
    fs.writeFileSync(file, whole);
    for (const planes of ['luma', 'all']) {
      const geometry = { width: 7, height: 5, fps: 10, label: 'clip.yuv', planes };
      const located = await locatedOutcome(new RawReader({ file }, geometry), planes);
      assert.equal(located.frames.length, 3);
      assert.deepEqual(located, await outcome(new RawReader({ file }, geometry)));
    }
    const stream = new Y4mReader(chunked(y4m(), 5), { label: 'stream' });
    locateFrames(stream);
    const frames = [];
    for await (const f of stream) {
      frames.push([f.located, f.luma.length]);
      f.release();
    }
    assert.deepEqual(frames, [[undefined, 35], [undefined, 35], [undefined, 35]]);
  });

  it('a file cut short or replaced after its frames were located: an error naming the input and the frame', async () => {
    const file = path.join(tmp, 'changing.y4m');
    fs.writeFileSync(file, y4m({ frames: 3 }));
    const source = new Y4mReader({ file }, { label: 'changing.y4m' });
    locateFrames(source);
    const frames = [];
    for await (const f of source) frames.push(f);
    assert.equal(frames.length, 3);
    // Its luma (35 bytes), or its Cr plane (the file's last 12 bytes).
    const read = async (f, p = 0) => {
      const reader = new LocatedFileReader();
      try {
        await reader.readPlane(f.located, f.format, p, f.index, new Uint8Array(p === 0 ? 35 : 12));
        return 'read';
      } catch (e) {
        return `${e.code}: ${e.message}`;
      } finally {
        await reader.close();
      }
    };
    assert.equal(await read(frames[2], 2), 'read');
    fs.truncateSync(file, fs.statSync(file).size - 10);
    assert.equal(await read(frames[2]), 'read');
    assert.match(await read(frames[2], 2), /^E_INPUT_TRUNCATED: changing\.y4m: frame 2: truncated: the file ended while this frame was read \(10 bytes missing/);
    // Another file put in its place (the old one kept linked, so that its inode is not reused).
    fs.linkSync(file, path.join(tmp, 'changing.old'));
    fs.writeFileSync(path.join(tmp, 'changing.new'), y4m({ frames: 3 }));
    fs.renameSync(path.join(tmp, 'changing.new'), file);
    assert.match(await read(frames[0]), /^E_INPUT_MISMATCH: changing\.y4m: frame 0: is no longer the file the run opened \(replaced during the run\)/);
    fs.rmSync(file);
    assert.match(await read(frames[1]), /^E_INPUT_NOT_FOUND: changing\.y4m: frame 1: cannot be opened again to read its frames: ENOENT/);
  });

  it("the CLI: a gpu run's y4m inputs come located, the values those of the cpu backend; host readers of samples keep them read", function () {
    if (!backendsUnderTest().includes('gpu')) this.skip();
    const clip = goldenClip('src01_160x90_8bit');
    const bin = new URL('../bin/vmaf-stream', import.meta.url).pathname;
    const run = (args, env = {}) => {
      const log = path.join(tmp, `located-${args.join('_').replace(/[^a-z0-9]/gi, '')}.json`);
      const r = spawnSync(process.execPath, [bin, '-r', clip.ref, '-d', clip.dis, '--json', '-o', log, '-q', ...args], {
        encoding: 'utf8',
        timeout: 240000,
        env: { ...process.env, VMAF_STREAM_TRACE: '1', XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp/xdg-runtime-0', ...env },
      });
      assert.equal(r.status, 0, r.stderr);
      const located = [...r.stderr.matchAll(/trace [\d.]+ frames located: (.*)$/gm)].map((m) => m[1]);
      return { located, frames: JSON.parse(fs.readFileSync(log, 'utf8')).frames };
    };
    const both = [clip.ref, clip.dis].sort();
    for (const extra of [[], ['--feature', 'psnr'], ['--feature', 'psnr', '-m', 'version=vmaf_v0.6.1neg']]) {
      const gpu = run(['--backend', 'gpu', ...extra]);
      const cpu = run(['--backend', 'cpu', '--threads', '2', ...extra]);
      assert.deepEqual(gpu.located.sort(), both, extra.join(' '));
      assert.deepEqual(cpu.located, []);
      assert.equal(gpu.frames.length, 48);
      assert.deepEqual(gpu.frames, cpu.frames, extra.join(' '));
    }
    // ciede runs on the host's cpu on either backend, alignment reads luma on the host: no
    // located frames; nor with VMAF_STREAM_LOCATED=0.
    for (const [extra, env] of [[['--feature', 'ciede']], [['--align', '0']], [[], { VMAF_STREAM_LOCATED: '0' }]]) {
      const gpu = run(['--backend', 'gpu', ...extra], env);
      assert.deepEqual(gpu.located, [], extra.join(' '));
      assert.deepEqual(gpu.frames, run(['--backend', 'cpu', '--threads', '2', ...extra]).frames, extra.join(' '));
    }
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
