import assert from 'node:assert/strict';
import { goldenFile } from './helpers/golden.mjs';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { Y4mReader, openY4m, parseY4mHeader } from '../dist/decode/y4m-reader.js';
import { openRaw } from '../dist/decode/raw-reader.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { openFfmpegSource } from '../dist/decode/ffmpeg-source.js';
import { choosePixelFormat, parseFfmpegBanner, lastErrorLine } from '../dist/decode/ffmpeg-probe.js';
import { installerFfmpegPath, locateFfmpeg, resolveFfmpegPath } from '../dist/decode/ffmpeg-path.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let tmp;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vmaf-decode-'));
});
after(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------
// Generated fixtures

/** Luma sample (x, y) of frame f: a pattern that differs between rows, columns and frames. */
const lumaAt = (x, y, f, bits) => (x * 37 + y * 101 + f * 59 + 13) % (1 << bits);
/** Chroma samples: a different pattern, so that reading chroma as luma shows. */
const chromaAt = (x, y, f, plane, bits) => ((x * 11 + y * 7 + f * 3 + plane * 97) ^ 0x55) % (1 << bits);

function plane(w, h, bits, at) {
  const bps = bits > 8 ? 2 : 1;
  const buf = Buffer.alloc(w * h * bps);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const v = at(x, y);
      if (bps === 2) buf.writeUInt16LE(v, (y * w + x) * 2);
      else buf[y * w + x] = v;
    }
  }
  return buf;
}

/**
 * Frame data (no headers) and the expected luma of each frame. dec: chroma decimation
 * [sx, sy] or null for mono; extraPlanes: alpha.
 */
function frameData({ width: w, height: h, bits, dec, frames, extraPlanes = 0 }) {
  const data = [];
  const luma = [];
  for (let f = 0; f < frames; f++) {
    const parts = [plane(w, h, bits, (x, y) => lumaAt(x, y, f, bits))];
    if (dec) {
      const cw = Math.ceil(w / dec[0]);
      const ch = Math.ceil(h / dec[1]);
      for (const p of [1, 2]) parts.push(plane(cw, ch, bits, (x, y) => chromaAt(x, y, f, p, bits)));
    }
    for (let e = 0; e < extraPlanes; e++) parts.push(plane(w, h, bits, () => (1 << bits) - 1));
    data.push(Buffer.concat(parts));
    const expect = bits > 8 ? new Uint16Array(w * h) : new Uint8Array(w * h);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) expect[y * w + x] = lumaAt(x, y, f, bits);
    luma.push(expect);
  }
  return { data, luma };
}

function makeY4m({ header, frameHeader = 'FRAME', ...geometry }) {
  const { data, luma } = frameData(geometry);
  const buf = Buffer.concat([Buffer.from(`${header}\n`), ...data.flatMap((d) => [Buffer.from(`${frameHeader}\n`), d])]);
  return { buf, luma, frameBytes: data[0]?.length ?? 0 };
}

/** A Readable that delivers `buf` in chunks of `size` bytes (exercises chunk boundaries). */
function chunked(buf, size) {
  const parts = [];
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size));
  return Readable.from(parts, { objectMode: false });
}

function writeTmp(name, buf) {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, buf);
  return p;
}

async function readAll(source) {
  const frames = [];
  try {
    for await (const f of source) {
      frames.push({ index: f.index, pts: f.pts, format: f.format, luma: f.luma.slice() });
      f.release();
    }
  } finally {
    await source.close();
  }
  return frames;
}

/** Reads to the end, returning the frames read and the error (or undefined). */
async function readUntilError(source) {
  const frames = [];
  let error;
  try {
    for await (const f of source) {
      frames.push(f.index);
      f.release();
    }
  } catch (e) {
    error = e;
  } finally {
    await source.close();
  }
  return { frames, error };
}

function assertError(error, code, ...patterns) {
  assert.ok(error, `expected an error ${code}`);
  assert.equal(error.code, code, `${error.code}: ${error.message}`);
  for (const p of patterns) assert.match(error.message, p);
}

const ffmpeg = installerFfmpegPath();
function ffmpegMake(out, ...args) {
  const p = path.join(tmp, out);
  execFileSync(ffmpeg, ['-v', 'error', '-y', ...args, p]);
  return p;
}

// ---------------------------------------------------------------------------------------

describe('y4m reader', () => {
  it('reads 7x5 4:2:0 (4x3 chroma) with many tags and frame params, in 5-byte chunks', async () => {
    const { buf, luma } = makeY4m({
      header: 'YUV4MPEG2 W7 H5 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=LIMITED Zfuture',
      frameHeader: 'FRAME Ixyz XFOO=1',
      width: 7, height: 5, bits: 8, dec: [2, 2], frames: 3,
    });
    const headerBytes = 'YUV4MPEG2 W7 H5 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG XCOLORRANGE=LIMITED Zfuture\n'.length;
    assert.equal(buf.length, headerBytes + 3 * ('FRAME Ixyz XFOO=1\n'.length + 7 * 5 + 2 * 4 * 3), 'chroma planes are 4x3');
    const source = new Y4mReader(chunked(buf, 5), { label: 'gen.y4m' });
    const format = await source.format();
    assert.deepEqual(format, { width: 7, height: 5, bitDepth: 8, chroma: '420', fps: 30000 / 1001 });
    assert.equal(source.header.interlace, 'p');
    assert.deepEqual(source.header.aspect, [1, 1]);
    const frames = await readAll(source);
    assert.equal(frames.length, 3);
    frames.forEach((f, i) => {
      assert.equal(f.index, i);
      assert.ok(f.luma instanceof Uint8Array);
      assert.deepEqual(f.luma, luma[i]);
      assert.ok(Math.abs(f.pts - (i * 1001) / 30000) < 1e-12);
    });
  });

  const cases = [
    // [C tag, decimation, bits, chroma, extra planes]
    ['420', [2, 2], 8, '420'],
    ['420mpeg2', [2, 2], 8, '420'],
    ['420paldv', [2, 2], 8, '420'],
    ['422', [2, 1], 8, '422'],
    ['444', [1, 1], 8, '444'],
    ['444alpha', [1, 1], 8, '444', 1],
    ['mono', null, 8, '400'],
    ['420p10', [2, 2], 10, '420'],
    ['422p10', [2, 1], 10, '422'],
    ['420p12', [2, 2], 12, '420'],
    ['422p12', [2, 1], 12, '422'],
    ['444p12', [1, 1], 12, '444'],
    ['420p16', [2, 2], 16, '420'],
    ['444p16', [1, 1], 16, '444'],
    ['mono10', null, 10, '400'],
    ['mono12', null, 12, '400'],
    ['mono16', null, 16, '400'],
  ];
  for (const [tag, dec, bits, chroma, extraPlanes] of cases) {
    it(`reads C${tag} at 7x5 (${bits}-bit ${chroma}) with exact luma`, async () => {
      const { buf, luma } = makeY4m({ header: `YUV4MPEG2 W7 H5 F25:1 C${tag}`, width: 7, height: 5, bits, dec, frames: 2, extraPlanes });
      const frames = await readAll(new Y4mReader(chunked(buf, 64), { label: 'gen' }));
      assert.equal(frames.length, 2);
      for (let i = 0; i < 2; i++) {
        assert.deepEqual(frames[i].format, { width: 7, height: 5, bitDepth: bits, chroma, fps: 25 });
        assert.equal(frames[i].luma.constructor, bits > 8 ? Uint16Array : Uint8Array);
        assert.deepEqual(frames[i].luma, luma[i]);
      }
    });
  }

  it('defaults to 4:2:0 8-bit without a C tag, and takes XYSCSS= when C is absent', async () => {
    const plain = makeY4m({ header: 'YUV4MPEG2 W9 H3 F25:1', width: 9, height: 3, bits: 8, dec: [2, 2], frames: 2 });
    const a = await readAll(new Y4mReader(Readable.from([plain.buf]), { label: 'plain' }));
    assert.deepEqual(a.map((f) => f.luma), plain.luma);
    assert.equal(a[0].format.chroma, '420');

    const x = makeY4m({ header: 'YUV4MPEG2 W9 H3 F25:1 XYSCSS=422P10', width: 9, height: 3, bits: 10, dec: [2, 1], frames: 2 });
    const b = await readAll(new Y4mReader(Readable.from([x.buf]), { label: 'xyscss' }));
    assert.deepEqual(b.map((f) => f.luma), x.luma);
    assert.deepEqual(b[0].format, { width: 9, height: 3, bitDepth: 10, chroma: '422', fps: 25 });
  });

  it('has no fps (and no pts) without an F tag or with F0:0', async () => {
    for (const header of ['YUV4MPEG2 W8 H2', 'YUV4MPEG2 W8 H2 F0:0']) {
      const g = makeY4m({ header, width: 8, height: 2, bits: 8, dec: [2, 2], frames: 1 });
      const [f] = await readAll(new Y4mReader(Readable.from([g.buf]), { label: 'nofps' }));
      assert.equal(f.format.fps, undefined);
      assert.equal(f.pts, undefined);
    }
  });

  it('reads a .y4m file by path, natively, and a misnamed one by its magic', async () => {
    const g = makeY4m({ header: 'YUV4MPEG2 W33 H17 F25:1 C420jpeg', width: 33, height: 17, bits: 8, dec: [2, 2], frames: 4 });
    const a = await readAll(openFrameSource(writeTmp('clip.y4m', g.buf)));
    assert.deepEqual(a.map((f) => f.luma), g.luma);
    const b = await readAll(openFrameSource(writeTmp('clip.video', g.buf)));
    assert.deepEqual(b.map((f) => f.luma), g.luma);
    const c = await readAll(openY4m(path.join(tmp, 'clip.y4m')));
    assert.equal(c.length, 4);
  });

  it('parses headers strictly and names the bad tag', () => {
    const bad = [
      ['YUV4MPEG2 Wabc H5 F25:1', /tag "Wabc"/],
      ['YUV4MPEG2 W0 H5 F25:1', /tag "W0"/],
      ['YUV4MPEG2 W7 H-5 F25:1', /tag "H-5"/],
      ['YUV4MPEG2 W7 H5 F25', /tag "F25"/],
      ['YUV4MPEG2 W7 H5 F25:1 Ix', /tag "Ix"/],
      ['YUV4MPEG2 W7 H5 F25:1 Afoo', /tag "Afoo"/],
      ['YUV4MPEG2 H5 F25:1', /no W \(width\) tag/],
      ['YUV4MPEG2 W7 F25:1', /no H \(height\) tag/],
      ['YUV4MPEG2 W7 H5 C411', /unsupported chroma format "C411"/],
      ['YUV4MPEG2 W7 H5 C420p9', /unsupported chroma format "C420p9"/],
      ['YUV4MPEG2 W7 H5 C444p14', /unsupported chroma format "C444p14"/],
      ['YUV4MPEG2 W7 H5 XYSCSS=411', /unsupported chroma format "XYSCSS=411"/],
      ['YUV4MPEG1 W7 H5', /not a YUV4MPEG2 stream/],
      ['RIFF', /not a YUV4MPEG2 stream/],
    ];
    for (const [line, re] of bad) {
      assert.throws(() => parseY4mHeader(line, 'in.y4m'), (e) => {
        assert.equal(e.code, 'E_INPUT_FORMAT', line);
        assert.match(e.message, /^in\.y4m: /);
        assert.match(e.message, re, line);
        return true;
      });
    }
  });

  it('a corrupt header file: E_INPUT_FORMAT from format() and from the iterator, naming the file', async () => {
    const file = writeTmp('bad.y4m', Buffer.from('YUV4MPEG2 W7 Hx F25:1\nFRAME\n'));
    const source = openFrameSource(file);
    await assert.rejects(source.format(), (e) => (assertError(e, 'E_INPUT_FORMAT', /bad\.y4m/, /"Hx"/), true));
    const { error } = await readUntilError(openFrameSource(file));
    assertError(error, 'E_INPUT_FORMAT', /bad\.y4m/, /tag "Hx"/);
    const notY4m = writeTmp('notreally.y4m', Buffer.alloc(5000, 0x41));
    assertError((await readUntilError(openFrameSource(notY4m))).error, 'E_INPUT_FORMAT', /notreally\.y4m/, /not a YUV4MPEG2 stream/);
  });

  it('a truncated last frame: E_INPUT_TRUNCATED naming the frame and the missing bytes, after the good frames', async () => {
    const g = makeY4m({ header: 'YUV4MPEG2 W7 H5 F25:1 C420jpeg', width: 7, height: 5, bits: 8, dec: [2, 2], frames: 3 });
    assert.equal(g.frameBytes, 59);
    const file = writeTmp('cut.y4m', g.buf.subarray(0, g.buf.length - 10));
    const { frames, error } = await readUntilError(openFrameSource(file));
    assert.deepEqual(frames, [0, 1]);
    assertError(error, 'E_INPUT_TRUNCATED', /cut\.y4m: frame 2: /, /10 of its 59 bytes are missing/);
    assert.equal(error.frame, 2);
    assert.equal(error.input, file);

    // Cut inside the luma plane of a 16-bit frame.
    const h = makeY4m({ header: 'YUV4MPEG2 W7 H5 F25:1 C444p16', width: 7, height: 5, bits: 16, dec: [1, 1], frames: 2 });
    const r = await readUntilError(new Y4mReader(Readable.from([h.buf.subarray(0, h.buf.length - 200)]), { label: 'cut16' }));
    assert.deepEqual(r.frames, [0]);
    assertError(r.error, 'E_INPUT_TRUNCATED', /cut16: frame 1: /, /200 of its 210 bytes/);

    // Cut inside the FRAME header.
    const cutHeader = Buffer.concat([g.buf.subarray(0, g.buf.length - 59 - 6), Buffer.from('FRA')]);
    const s = await readUntilError(new Y4mReader(Readable.from([cutHeader]), { label: 'cuthdr' }));
    assert.deepEqual(s.frames, [0, 1]);
    assertError(s.error, 'E_INPUT_TRUNCATED', /cuthdr: frame 2: /, /FRAME header/);
  });

  it('frames of a megabyte and more (planes \'all\'): the file\'s bytes; a cut inside one is found, with the bytes missing', async () => {
    const width = 1280;
    const height = 720;
    const g = makeY4m({ header: `YUV4MPEG2 W${width} H${height} F25:1 C420jpeg`, width, height, bits: 8, dec: [2, 2], frames: 3 });
    assert.equal(g.frameBytes, 1382400);
    const file = writeTmp('big.y4m', g.buf);
    const { data } = frameData({ width, height, bits: 8, dec: [2, 2], frames: 3 });
    const same = [];
    const source = openFrameSource(file, { planes: 'all' });
    for await (const f of source) {
      const planes = [f.luma, ...f.chroma].map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength));
      same.push(Buffer.concat(planes).equals(data[f.index]));
      f.release();
    }
    assert.deepEqual(same, [true, true, true]);
    // Cut inside the last frame's data, past its FRAME line.
    const cut = writeTmp('big-cut.y4m', g.buf.subarray(0, g.buf.length - 700000));
    const { frames, error } = await readUntilError(openFrameSource(cut, { planes: 'all' }));
    assert.deepEqual(frames, [0, 1]);
    assertError(error, 'E_INPUT_TRUNCATED', /big-cut\.y4m: frame 2: /, /700000 of its 1382400 bytes are missing/);
  });

  it('a missing FRAME marker: E_INPUT_FORMAT naming the frame', async () => {
    const g = makeY4m({ header: 'YUV4MPEG2 W7 H5 F25:1', width: 7, height: 5, bits: 8, dec: [2, 2], frames: 3 });
    const buf = Buffer.from(g.buf);
    const second = buf.indexOf('FRAME', buf.indexOf('FRAME') + 5);
    buf.write('FRAMX', second);
    const { frames, error } = await readUntilError(new Y4mReader(Readable.from([buf]), { label: 'marker.y4m' }));
    assert.deepEqual(frames, [0]);
    assertError(error, 'E_INPUT_FORMAT', /marker\.y4m: frame 1: /, /expected a FRAME header/);
  });

  it('no data, or a header and no frames: E_INPUT_EMPTY', async () => {
    assertError((await readUntilError(openFrameSource(writeTmp('empty.y4m', Buffer.alloc(0))))).error, 'E_INPUT_EMPTY', /empty\.y4m/);
    const headerOnly = writeTmp('header-only.y4m', Buffer.from('YUV4MPEG2 W64 H48 F25:1 C420jpeg\n'));
    assertError((await readUntilError(openFrameSource(headerOnly))).error, 'E_INPUT_EMPTY', /header-only\.y4m: has no frames/);
    assertError((await readUntilError(new Y4mReader(Readable.from([]), { label: 'nothing' }))).error, 'E_INPUT_EMPTY', /nothing/);
  });

  it('can be iterated only once, and close() ends a pending iteration quietly', async () => {
    const g = makeY4m({ header: 'YUV4MPEG2 W8 H8 F25:1', width: 8, height: 8, bits: 8, dec: [2, 2], frames: 5 });
    const source = new Y4mReader(Readable.from([g.buf]), { label: 'once', poolSlots: 1 });
    const it = source[Symbol.asyncIterator]();
    assert.throws(() => source[Symbol.asyncIterator](), /only once/);
    const first = await it.next();
    const blocked = it.next(); // waits for the only slot
    await source.close();
    assert.deepEqual(await blocked, { done: true, value: undefined });
    first.value.release();
  });
});

describe('raw reader', () => {
  const cases = [
    // [pixelFormat, decimation, bits]
    ['420', [2, 2], 8],
    ['422', [2, 1], 10],
    ['444', [1, 1], 16],
    ['400', null, 12],
    ['420', [2, 2], 12],
  ];
  for (const [pixelFormat, dec, bits] of cases) {
    it(`reads ${pixelFormat} ${bits}-bit at 7x5 with exact luma`, async () => {
      const { data, luma } = frameData({ width: 7, height: 5, bits, dec, frames: 3 });
      const file = writeTmp(`raw_${pixelFormat}_${bits}.yuv`, Buffer.concat(data));
      const frames = await readAll(openFrameSource(file, { width: 7, height: 5, pixelFormat, bitDepth: bits }));
      assert.equal(frames.length, 3);
      frames.forEach((f, i) => {
        assert.deepEqual(f.format, { width: 7, height: 5, bitDepth: bits, chroma: pixelFormat });
        assert.deepEqual(f.luma, luma[i]);
        assert.equal(f.pts, undefined);
      });
      // The same from a stream, in odd chunks.
      const again = await readAll(openRaw(chunked(Buffer.concat(data), 7), { width: 7, height: 5, pixelFormat, bitDepth: bits, label: 'chunks', fps: 10 }));
      assert.deepEqual(again.map((f) => f.luma), luma);
      assert.equal(again[2].pts, 0.2);
    });
  }

  it('takes width/height for any path (libvmaf -w -h), defaulting to 420 8-bit', async () => {
    const { data, luma } = frameData({ width: 6, height: 4, bits: 8, dec: [2, 2], frames: 2 });
    const file = writeTmp('clip.raw', Buffer.concat(data));
    const frames = await readAll(openFrameSource(file, { width: 6, height: 4 }));
    assert.deepEqual(frames.map((f) => f.luma), luma);
  });

  it('a truncated last frame: E_INPUT_TRUNCATED naming the frame and the missing bytes', async () => {
    const { data } = frameData({ width: 7, height: 5, bits: 10, dec: [2, 2], frames: 3 });
    const file = writeTmp('cut.yuv', Buffer.concat(data).subarray(0, 2 * 118 + 50));
    const { frames, error } = await readUntilError(openFrameSource(file, { width: 7, height: 5, bitDepth: 10 }));
    assert.deepEqual(frames, [0, 1]);
    assertError(error, 'E_INPUT_TRUNCATED', /cut\.yuv: frame 2: /, /68 of its 118 bytes are missing/);
    assert.equal(error.frame, 2);
  });

  it('rejects missing or bad geometry with a UsageError, at once', () => {
    assert.throws(() => openFrameSource(path.join(tmp, 'x.yuv')), (e) => e.code === 'E_USAGE' && /x\.yuv/.test(e.message) && /width and height/.test(e.message));
    assert.throws(() => openFrameSource(path.join(tmp, 'x.yuv'), { width: 8, height: 8, bitDepth: 9 }), (e) => e.code === 'E_USAGE' && /bit depth 9/.test(e.message));
    assert.throws(() => openFrameSource(path.join(tmp, 'x.yuv'), { width: 8, height: 8, pixelFormat: '411' }), (e) => e.code === 'E_USAGE' && /411/.test(e.message));
    assert.throws(() => openFrameSource(path.join(tmp, 'x.yuv'), { width: 0, height: 8 }), (e) => e.code === 'E_USAGE');
  });

  it('a missing .yuv file: E_INPUT_NOT_FOUND', async () => {
    const { error } = await readUntilError(openFrameSource(path.join(tmp, 'missing.yuv'), { width: 8, height: 8 }));
    assertError(error, 'E_INPUT_NOT_FOUND', /missing\.yuv/);
  });
});

describe('ffmpeg source', () => {
  it('decodes testsrc dis.mp4: 12 frames, 640x360, 8-bit 4:2:0, pts from the frame rate', async () => {
    const frames = await readAll(openFrameSource(goldenFile('testsrc_640x360_x264_12f/dis.mp4')));
    assert.equal(frames.length, 12);
    assert.deepEqual(frames[0].format, { width: 640, height: 360, bitDepth: 8, chroma: '420', fps: 25 });
    assert.ok(frames[0].luma instanceof Uint8Array);
    assert.equal(frames[0].luma.length, 640 * 360);
    assert.equal(frames[10].pts, 0.4);
    assert.deepEqual(frames.map((f) => f.index), [...Array(12).keys()]);
  });

  it('keeps 10 bits: src01_288x162_10bit/ref.mkv', async () => {
    const source = openFfmpegSource(goldenFile('src01_288x162_10bit/ref.mkv'));
    const frames = await readAll(source);
    assert.equal(source.requestedPixelFormat, 'yuv420p10le');
    assert.equal(frames.length, 3);
    assert.deepEqual(frames[0].format, { width: 288, height: 162, bitDepth: 10, chroma: '420', fps: 25 });
    assert.ok(frames[0].luma instanceof Uint16Array);
    const max = frames[0].luma.reduce((m, v) => (v > m ? v : m), 0);
    assert.ok(max > 255 && max <= 1023, `max ${max}`);
  });

  it('keeps 12-bit 4:4:4 at an odd size: rgbtest_301x199_444_12bit', async () => {
    const frames = await readAll(openFrameSource(goldenFile('rgbtest_301x199_444_12bit/dis.mkv')));
    assert.equal(frames.length, 5);
    assert.deepEqual(frames[0].format, { width: 301, height: 199, bitDepth: 12, chroma: '444', fps: 25 });
    const max = frames[0].luma.reduce((m, v) => (v > m ? v : m), 0);
    assert.ok(max > 1023 && max <= 4095, `max ${max}`);
  });

  it('decodes a y4m to exactly the luma the native reader reads', async () => {
    const file = goldenFile('src01_160x90_8bit/ref.y4m');
    const viaFfmpeg = await readAll(openFfmpegSource(file));
    const native = await readAll(openY4m(file));
    assert.equal(viaFfmpeg.length, 48);
    assert.equal(native.length, 48);
    for (let i = 0; i < 48; i++) assert.deepEqual(viaFfmpeg[i].luma, native[i].luma, `frame ${i}`);
  });

  it('scales with scaleTo (bicubic), even a y4m', async () => {
    const source = openFrameSource(goldenFile('src01_160x90_8bit/dis.y4m'), { scaleTo: { width: 80, height: 46 } });
    const frames = await readAll(source);
    assert.equal(frames.length, 48);
    assert.deepEqual(frames[0].format, { width: 80, height: 46, bitDepth: 8, chroma: '420', fps: 25 });
    assert.throws(() => openFfmpegSource('x.mp4', { scaleTo: { width: 0, height: 10 } }), (e) => e.code === 'E_USAGE');
    assert.throws(() => openFrameSource('x.mp4', { scaleTo: { width: 64, height: 1.5 } }), (e) => e.code === 'E_USAGE' && /height/.test(e.message));
  });

  it('maps non-planar-YUV inputs to planar YUV at the source depth', async () => {
    const make = (name, pixFmt) => ffmpegMake(name, '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=5', '-frames:v', '2', '-pix_fmt', pixFmt, '-c:v', 'rawvideo');
    const expectations = [
      ['rgb24.nut', 'rgb24', 'yuv444p', 8, '444'],
      ['gbrp12.nut', 'gbrp12le', 'yuv444p12le', 12, '444'],
      ['nv12.nut', 'nv12', 'yuv420p', 8, '420'],
      ['p9.nut', 'yuv420p9le', 'yuv420p10le', 10, '420'],
      ['gray.nut', 'gray', 'gray', 8, '400'],
    ];
    for (const [name, pixFmt, asked, bits, chroma] of expectations) {
      const source = openFfmpegSource(make(name, pixFmt));
      const frames = await readAll(source);
      assert.equal(source.requestedPixelFormat, asked, name);
      assert.equal(frames.length, 2, name);
      assert.deepEqual(frames[0].format, { width: 64, height: 48, bitDepth: bits, chroma, fps: 5 }, name);
    }
  });

  it('chooses pixel formats and parses ffmpeg banners', () => {
    const table = {
      yuv420p: 'yuv420p', yuvj420p: 'yuvj420p', yuv422p10le: 'yuv422p10le', yuv444p12be: 'yuv444p12le',
      yuv420p9le: 'yuv420p10le', yuv444p14le: 'yuv444p16le', yuv411p: 'yuv422p', yuv440p: 'yuv444p', yuva420p: 'yuv420p',
      nv12: 'yuv420p', nv21: 'yuv420p', p010le: 'yuv420p10le', p016le: 'yuv420p16le', yuyv422: 'yuv422p',
      rgb24: 'yuv444p', bgra: 'yuv444p', rgb48le: 'yuv444p16le', gbrp10le: 'yuv444p10le', gbrp12le: 'yuv444p12le',
      pal8: 'yuv444p', gray: 'gray', gray10le: 'gray10le', gray9le: 'gray10le', ya8: 'gray', monob: 'gray',
    };
    for (const [input, want] of Object.entries(table)) assert.equal(choosePixelFormat(input), want, input);
    assert.equal(choosePixelFormat('something_new'), undefined);
    assert.equal(choosePixelFormat(undefined), undefined);

    const banner = [
      "Input #0, matroska,webm, from 'ref.mkv':",
      '  Duration: 00:00:00.20, start: 0.000000, bitrate: 2183 kb/s',
      '    Stream #0:0(eng): Video: ffv1 (FFV1 / 0x31564646), yuv444p12le(tv, progressive), 301x199, SAR 1:1 DAR 301:199, 25 fps',
      'At least one output file must be specified',
    ].join('\n');
    assert.deepEqual(parseFfmpegBanner(banner), {
      demuxer: 'matroska,webm',
      video: { codec: 'ffv1', pixFmt: 'yuv444p12le', width: 301, height: 199 },
    });
    const h264 = '    Stream #0:0(und): Video: h264 (High) (avc1 / 0x31637661), yuv420p, 640x360 [SAR 1:1 DAR 16:9], 205 kb/s';
    assert.deepEqual(parseFfmpegBanner(h264).video, { codec: 'h264', pixFmt: 'yuv420p', width: 640, height: 360 });
    assert.equal(lastErrorLine('x.mp4: Invalid data found when processing input\nConversion failed!\n'), 'x.mp4: Invalid data found when processing input');
  });

  it('reads a Readable: y4m natively (sniffed), anything else through ffmpeg', async () => {
    const y4m = goldenFile('src01_160x90_8bit/dis.y4m');
    const piped = await readAll(openFrameSource(fs.createReadStream(y4m), { label: 'piped-y4m' }));
    const native = await readAll(openY4m(y4m));
    assert.equal(piped.length, 48);
    assert.deepEqual(piped[47].luma, native[47].luma);

    const mkv = await readAll(openFrameSource(fs.createReadStream(goldenFile('testsrc_640x360_x264_12f/ref.mkv')), { label: 'piped-mkv' }));
    assert.equal(mkv.length, 12);
    assert.deepEqual(mkv[0].format, { width: 640, height: 360, bitDepth: 8, chroma: '420', fps: 25 });
  });

  it('reads standard input ("-"): y4m natively, mkv through ffmpeg', async function () {
    this.timeout(20000);
    const script = `
      import { openFrameSource } from ${JSON.stringify(path.join(ROOT, 'dist/decode/open-source.js'))};
      const s = openFrameSource('-');
      let n = 0, sum = 0, format;
      try {
        format = await s.format();
        for await (const f of s) { n++; sum += f.luma[f.luma.length - 1]; f.release(); }
        console.log(JSON.stringify({ n, sum, format }));
      } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }
      finally { await s.close(); }`;
    const run = (file) =>
      new Promise((resolve, reject) => {
        const fd = fs.openSync(file, 'r');
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: [fd, 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        child.on('close', () => {
          fs.closeSync(fd);
          resolve(JSON.parse(out));
        });
      });
    const a = await run(goldenFile('src01_160x90_8bit/ref.y4m'));
    assert.equal(a.n, 48);
    assert.deepEqual(a.format, { width: 160, height: 90, bitDepth: 8, chroma: '420', fps: 25 });
    const b = await run(goldenFile('src01_288x162_10bit/dis.mkv'));
    assert.equal(b.n, 3);
    assert.equal(b.format.bitDepth, 10);
    const c = await run(writeTmp('garbage.bin', Buffer.from('this is not a video at all\n'.repeat(50))));
    assert.equal(c.code, 'E_INPUT_FORMAT');
    assert.match(c.message, /^-: /);
    assert.match(c.message, /ffmpeg says/);
  });

  it('reads named pipes as streams: a .y4m fifo natively, another through ffmpeg', async function () {
    if (process.platform === 'win32') this.skip();
    const feed = (fifo, file) => {
      const w = fs.createWriteStream(fifo);
      w.on('error', () => {});
      fs.createReadStream(file).pipe(w);
    };
    const fifo1 = path.join(tmp, 'pipe.y4m');
    execFileSync('mkfifo', [fifo1]);
    feed(fifo1, goldenFile('src01_160x90_8bit/ref.y4m'));
    const a = await readAll(openFrameSource(fifo1));
    assert.equal(a.length, 48);

    const fifo2 = path.join(tmp, 'pipe-any');
    execFileSync('mkfifo', [fifo2]);
    feed(fifo2, goldenFile('src01_288x162_8bit/ref.mkv'));
    const b = await readAll(openFrameSource(fifo2));
    assert.equal(b.length, 3);
    assert.deepEqual(b[0].format, { width: 288, height: 162, bitDepth: 8, chroma: '420', fps: 25 });
  });

  it('a missing file: E_INPUT_NOT_FOUND naming it', async () => {
    for (const name of ['nope.mp4', 'nope.y4m', 'nope']) {
      const file = path.join(tmp, name);
      const { error } = await readUntilError(openFrameSource(file));
      assertError(error, 'E_INPUT_NOT_FOUND', new RegExp(name.replace('.', '\\.')));
      assert.equal(error.input, file);
    }
    // Straight to ffmpeg: its own message is quoted.
    const { error } = await readUntilError(openFfmpegSource(path.join(tmp, 'gone.mkv')));
    assertError(error, 'E_INPUT_NOT_FOUND', /gone\.mkv/, /No such file or directory/);
  });

  it('a non-video file: E_INPUT_FORMAT naming it, with ffmpeg\'s last error line', async () => {
    const txt = writeTmp('notes.txt', Buffer.from('hello, this is text\n'));
    assertError((await readUntilError(openFrameSource(txt))).error, 'E_INPUT_FORMAT', /notes\.txt/, /not a video/);
    const fake = writeTmp('fake.mp4', Buffer.from('hello, this is text\n'.repeat(20)));
    assertError((await readUntilError(openFrameSource(fake))).error, 'E_INPUT_FORMAT', /fake\.mp4/, /ffmpeg says: .*Invalid data found/);
    const wav = ffmpegMake('tone.wav', '-f', 'lavfi', '-i', 'sine=duration=0.1');
    assertError((await readUntilError(openFrameSource(wav))).error, 'E_INPUT_FORMAT', /tone\.wav/, /no video stream/);
  });

  it('zero frames: E_INPUT_EMPTY naming the input', async () => {
    const headerOnly = writeTmp('noframes.dat', Buffer.from('YUV4MPEG2 W64 H48 F25:1 C420jpeg\n'));
    const { error } = await readUntilError(openFfmpegSource(headerOnly));
    assertError(error, 'E_INPUT_EMPTY', /noframes\.dat/, /no video frames/);
    const zero = writeTmp('zero.mp4', Buffer.alloc(0));
    assertError((await readUntilError(openFrameSource(zero))).error, 'E_INPUT_EMPTY', /zero\.mp4/);
  });

  it('close() kills the ffmpeg child', async () => {
    const source = openFfmpegSource(goldenFile('ladder_320x180_300f/ref.mp4'), { poolSlots: 2 });
    const it = source[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.value.index, 0);
    const pid = source.pid;
    assert.ok(pid > 0);
    assert.doesNotThrow(() => process.kill(pid, 0), 'ffmpeg runs');
    await source.close();
    first.value.release();
    assert.throws(() => process.kill(pid, 0), /ESRCH/, 'ffmpeg is gone');
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  it('an unusable ffmpegPath: E_FFMPEG', async () => {
    const { error } = await readUntilError(openFrameSource(goldenFile('testsrc_640x360_x264_12f/dis.mp4'), { ffmpegPath: path.join(tmp, 'no-ffmpeg') }));
    assertError(error, 'E_FFMPEG', /no-ffmpeg/);
  });
});

describe('ffmpeg source: luma only, direct reads', () => {
  /** The old path: the whole planar y4m, chroma read past, through ffmpeg's stdout pipe. */
  const OLD = { lumaOnly: false, directReads: false };
  const directExpected = process.platform !== 'win32';

  /** Opens the same input both ways and checks frames, formats, pts and luma are identical. */
  async function assertSameAsOldPath(file, options = {}, expect = {}) {
    const fresh = openFfmpegSource(file, options);
    const old = openFfmpegSource(file, { ...options, ...OLD });
    const a = await readAll(fresh);
    const b = await readAll(old);
    const name = `${path.basename(path.dirname(file))}/${path.basename(file)}${options.scaleTo ? ` scaled to ${options.scaleTo.width}x${options.scaleTo.height}` : ''}`;
    assert.equal(fresh.lumaOnly, expect.lumaOnly ?? true, `${name}: luma only`);
    assert.equal(fresh.directReads, directExpected, `${name}: direct reads`);
    assert.equal(old.lumaOnly, false);
    assert.equal(old.directReads, false);
    if (fresh.lumaOnly) assert.match(fresh.commandLine, /extractplanes=y/);
    assert.doesNotMatch(old.commandLine, /extractplanes/);
    assert.ok(a.length > 0, name);
    assert.equal(a.length, b.length, `${name}: frame count`);
    for (let i = 0; i < a.length; i++) {
      assert.deepEqual(a[i].format, b[i].format, `${name}: frame ${i} format`);
      assert.equal(a[i].index, b[i].index);
      assert.equal(a[i].pts, b[i].pts, `${name}: frame ${i} pts`);
      assert.equal(a[i].luma.constructor, b[i].luma.constructor);
      assert.ok(Buffer.from(a[i].luma.buffer, a[i].luma.byteOffset, a[i].luma.byteLength).equals(
        Buffer.from(b[i].luma.buffer, b[i].luma.byteOffset, b[i].luma.byteLength)), `${name}: frame ${i} luma differs`);
    }
    return a;
  }

  const clips = [
    // [clip, format of its frames]
    ['testsrc_640x360_x264_12f/dis.mp4', { width: 640, height: 360, bitDepth: 8, chroma: '420', fps: 25 }],
    ['hd_1920x1080_x264_2f/ref.mp4', { width: 1920, height: 1080, bitDepth: 8, chroma: '420', fps: 25 }],
    ['src01_288x162_10bit/ref.mkv', { width: 288, height: 162, bitDepth: 10, chroma: '420', fps: 25 }],
    ['gradients_480x270_10bit/dis.mkv', { width: 480, height: 270, bitDepth: 10, chroma: '420', fps: 25 }],
    ['rgbtest_301x199_444_12bit/ref.mkv', { width: 301, height: 199, bitDepth: 12, chroma: '444', fps: 25 }],
    ['rgbtest_301x199_444_12bit/dis.mkv', { width: 301, height: 199, bitDepth: 12, chroma: '444', fps: 25 }],
    ['mandel_213x121_odd/ref.mkv', { width: 213, height: 121, bitDepth: 8, chroma: '420', fps: 25 }],
    ['mandel_213x121_odd/dis.mkv', { width: 213, height: 121, bitDepth: 8, chroma: '420', fps: 25 }],
  ];
  for (const [clip, format] of clips) {
    it(`${clip}: the luma plane alone is bit-exact with the full y4m's luma, at its own size and scaled`, async () => {
      const file = goldenFile(clip);
      const frames = await assertSameAsOldPath(file);
      assert.deepEqual(frames[0].format, format);
      assert.equal(frames[0].luma.length, format.width * format.height);
      const max = frames[0].luma.reduce((m, v) => (v > m ? v : m), 0);
      assert.ok(max < 1 << format.bitDepth && (format.bitDepth === 8 || max >= 1 << (format.bitDepth - 2)), `max ${max}`);
      // scale first (bicubic), then the luma plane: down to an odd size, and up. (Not an odd
      // width above 8 bits with subsampled chroma: the old path breaks there, see below.)
      const oddWidthOk = format.bitDepth === 8 || format.chroma === '444';
      const down = { width: Math.floor(format.width / 2) + (oddWidthOk ? 1 - (Math.floor(format.width / 2) % 2) : Math.floor(format.width / 2) % 2), height: Math.floor(format.height / 3) | 1 };
      const scaled = await assertSameAsOldPath(file, { scaleTo: down });
      assert.deepEqual(scaled[0].format, { ...format, ...down });
      await assertSameAsOldPath(file, { scaleTo: { width: format.width + 18, height: format.height + 10 } });
    });
  }

  it('every planar YUV format: yuvj (full range), 4:2:2, 16-bit, and conversions from RGB and nv12', async () => {
    // An even width: at an odd one the old path breaks above 8 bits (see below).
    const source = 'mandelbrot=size=68x43:rate=10';
    const make = (name, pixFmt, codec = 'ffv1') => ffmpegMake(name, '-f', 'lavfi', '-i', source, '-frames:v', '3', '-pix_fmt', pixFmt, '-c:v', codec);
    const cases = [
      ['yuvj420p.mkv', 'yuvj420p', 8, '420'],
      ['yuvj444p.mkv', 'yuvj444p', 8, '444'],
      ['yuv422p.mkv', 'yuv422p', 8, '422'],
      ['yuv422p10le.mkv', 'yuv422p10le', 10, '422'],
      ['yuv444p10le.mkv', 'yuv444p10le', 10, '444'],
      ['yuv420p12le.mkv', 'yuv420p12le', 12, '420'],
      ['yuv420p16le.nut', 'yuv420p16le', 16, '420', 'rawvideo'],
      ['yuv444p16le.nut', 'yuv444p16le', 16, '444', 'rawvideo'],
      ['rgb24.nut', 'rgb24', 8, '444', 'rawvideo'],
      ['gbrp12.nut', 'gbrp12le', 12, '444', 'rawvideo'],
      ['nv12.nut', 'nv12', 8, '420', 'rawvideo'],
      ['yuvj420p.mjpeg.mkv', 'yuvj420p', 8, '420', 'mjpeg'],
    ];
    for (const [name, pixFmt, bits, chroma, codec] of cases) {
      const file = make(name, pixFmt, codec);
      const frames = await assertSameAsOldPath(file);
      assert.deepEqual(frames[0].format, { width: 68, height: 43, bitDepth: bits, chroma, fps: 10 }, name);
      await assertSameAsOldPath(file, { scaleTo: { width: bits === 8 || chroma === '444' ? 31 : 32, height: 17 } });
    }
    // Gray is luma already: no extractplanes, the same reads.
    const gray = make('gray10.nut', 'gray10le', 'rawvideo');
    const frames = await assertSameAsOldPath(gray, {}, { lumaOnly: false });
    assert.deepEqual(frames[0].format, { width: 68, height: 43, bitDepth: 10, chroma: '400', fps: 10 });
  });

  it('odd widths above 8 bits with subsampled chroma: the luma plane is right (the full y4m is not)', async () => {
    // ffmpeg 2018's y4m muxer writes the chroma rows of an odd-width 10-bit 4:2:0 picture a
    // byte short (289 bytes for 144.5 samples), so the full y4m loses its framing after frame
    // 0. The luma plane alone has no chroma: compare it with ffmpeg's rawvideo output instead.
    const file = goldenFile('src01_288x162_10bit/ref.mkv');
    for (const [scaleTo, pixFmt] of [[{ width: 289, height: 109 }, 'yuv420p10le'], [{ width: 75, height: 41 }, 'yuv420p10le']]) {
      const raw = execFileSync(ffmpeg, ['-v', 'error', '-nostdin', '-i', file, '-vf', `scale=${scaleTo.width}:${scaleTo.height}:flags=bicubic,format=pix_fmts=${pixFmt}`, '-f', 'rawvideo', '-'], { maxBuffer: 1 << 28 });
      const lumaBytes = scaleTo.width * scaleTo.height * 2;
      const frameBytes = lumaBytes + 2 * Math.ceil(scaleTo.width / 2) * Math.ceil(scaleTo.height / 2) * 2;
      assert.equal(raw.length, 3 * frameBytes);
      const source = openFfmpegSource(file, { scaleTo });
      const frames = await readAll(source);
      assert.equal(source.lumaOnly, true);
      assert.equal(frames.length, 3);
      frames.forEach((f, i) => {
        assert.deepEqual(f.format, { ...scaleTo, bitDepth: 10, chroma: '420', fps: 25 });
        assert.ok(Buffer.from(f.luma.buffer, f.luma.byteOffset, f.luma.byteLength).equals(raw.subarray(i * frameBytes, i * frameBytes + lumaBytes)), `frame ${i}`);
      });
    }
    const { error } = await readUntilError(openFfmpegSource(file, { ...OLD, scaleTo: { width: 289, height: 109 } }));
    assertError(error, 'E_INPUT_FORMAT', /frame 1: corrupt YUV4MPEG2 data/);
  });

  it('keeps exact NTSC pts (30000/1001), the start time, and the autorotated size', async () => {
    const ntsc = ffmpegMake('ntsc.mp4', '-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=30000/1001', '-frames:v', '12', '-c:v', 'libx264', '-pix_fmt', 'yuv420p');
    const a = await assertSameAsOldPath(ntsc);
    assert.equal(a.length, 12);
    assert.equal(a[0].format.fps, 30000 / 1001);
    assert.equal(a[7].pts, 7 / (30000 / 1001));
    const ts = ffmpegMake('late.ts', '-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=25', '-frames:v', '6', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-f', 'mpegts');
    const t = await assertSameAsOldPath(ts);
    assert.ok(t[0].pts > 1, `an MPEG-TS starts late: ${t[0].pts}`);
    // A phone video: coded 64x48, rotate=90; ffmpeg turns it upright, 48x64, which the
    // probe's banner does not say (the y4m header does).
    const rotated = ffmpegMake('rotated.mp4', '-i', ntsc, '-c', 'copy', '-metadata:s:v:0', 'rotate=90');
    const r = await assertSameAsOldPath(rotated);
    assert.equal(r[0].format.width, 48);
    assert.equal(r[0].format.height, 64);
  });

  it('truncated and corrupt inputs fail (or not) exactly as before, after the same frames', async () => {
    const cut = (name, file, fraction) => {
      const data = fs.readFileSync(file);
      return writeTmp(name, data.subarray(0, Math.floor(data.length * fraction)));
    };
    const fast = ffmpegMake('fast.mp4', '-i', goldenFile('ladder_320x180_300f/ref.mp4'), '-c', 'copy', '-movflags', '+faststart');
    const inputs = [
      cut('cut.mkv', goldenFile('src01_288x162_10bit/ref.mkv'), 0.5),
      cut('cut-fast.mp4', fast, 0.4),
      cut('cut-moov.mp4', goldenFile('hd_1920x1080_x264_2f/ref.mp4'), 0.5), // no moov atom: nothing to decode
      cut('cut444.mkv', goldenFile('rgbtest_301x199_444_12bit/dis.mkv'), 0.7),
    ];
    for (const file of inputs) {
      const fresh = await readUntilError(openFfmpegSource(file));
      const old = await readUntilError(openFfmpegSource(file, OLD));
      assert.deepEqual(fresh.frames, old.frames, path.basename(file));
      assert.equal(fresh.error?.code, old.error?.code, path.basename(file));
      assert.equal(fresh.error?.message, old.error?.message, path.basename(file));
    }
  });

  it('a stream (not probed) keeps the full y4m; a format given for it gets the luma plane', async () => {
    const file = goldenFile('src01_288x162_10bit/dis.mkv');
    const piped = openFfmpegSource(fs.createReadStream(file), { label: 'piped' });
    const a = await readAll(piped);
    assert.equal(piped.lumaOnly, false);
    assert.equal(piped.requestedPixelFormat, undefined);
    const told = openFfmpegSource(fs.createReadStream(file), { label: 'told', pixelFormat: 'yuv420p10le' });
    const b = await readAll(told);
    assert.equal(told.lumaOnly, true);
    assert.equal(a.length, 3);
    assert.deepEqual(b.map((f) => f.format), a.map((f) => f.format));
    assert.deepEqual(b.map((f) => f.luma), a.map((f) => f.luma));
  });

  it('a luma-only y4m that is not the asked depth or not mono: E_FFMPEG', async () => {
    const mono = makeY4m({ header: 'YUV4MPEG2 W8 H4 F25:1 Cmono', width: 8, height: 4, bits: 8, dec: null, frames: 2 });
    const ok = await readAll(new Y4mReader(Readable.from([mono.buf]), { label: 'm', lumaOf: { chroma: '422', bitDepth: 8 } }));
    assert.deepEqual(ok.map((f) => f.luma), mono.luma);
    assert.deepEqual(ok[0].format, { width: 8, height: 4, bitDepth: 8, chroma: '422', fps: 25 });
    const depth = await readUntilError(new Y4mReader(Readable.from([mono.buf]), { label: 'd', lumaOf: { chroma: '420', bitDepth: 10 } }));
    assertError(depth.error, 'E_FFMPEG', /^d: /, /Cmono/, /10-bit luma plane/);
    const full = makeY4m({ header: 'YUV4MPEG2 W8 H4 F25:1 C420', width: 8, height: 4, bits: 8, dec: [2, 2], frames: 1 });
    const chroma = await readUntilError(new Y4mReader(Readable.from([full.buf]), { label: 'c', lumaOf: { chroma: '420', bitDepth: 8 } }));
    assertError(chroma.error, 'E_FFMPEG', /C420/);
  });

  it('direct reads over a socket: any chunking, a slow consumer, one pool slot, a tiny read-ahead', async function () {
    if (process.platform === 'win32') this.skip();
    const net = await import('node:net');
    const { DirectFeed } = await import('../dist/decode/byte-reader.js');
    const g = makeY4m({ header: 'YUV4MPEG2 W301 H199 F25:1 C444p12', width: 301, height: 199, bits: 12, dec: [1, 1], frames: 6 });
    const dir = fs.mkdtempSync(path.join(tmp, 'sock-'));
    for (const [i, { sizes, pauseEvery, slots, highWaterMark }] of [
      { sizes: [1 << 20], pauseEvery: 0, slots: 8 },
      { sizes: [1, 7, 4096, 65536, 3, 300000], pauseEvery: 3, slots: 1, highWaterMark: 1000 },
      { sizes: [119799, 119800, 119801], pauseEvery: 1, slots: 2, highWaterMark: 1 << 20 },
    ].entries()) {
      const socketPath = path.join(dir, `${i}.sock`);
      const server = net.createServer(async (conn) => {
        let at = 0;
        for (let k = 0; at < g.buf.length; k++) {
          const n = sizes[k % sizes.length];
          if (!conn.write(g.buf.subarray(at, at + n))) await new Promise((r) => conn.once('drain', r));
          at += n;
          if (pauseEvery && k % pauseEvery === 0) await new Promise((r) => setTimeout(r, 1));
        }
        conn.end();
      });
      await new Promise((r) => server.listen(socketPath, r));
      const feed = new DirectFeed();
      const socket = net.connect({ path: socketPath, onread: feed.onread });
      const options = { label: 'socket', directFeed: feed, poolSlots: slots };
      if (highWaterMark) options.highWaterMark = highWaterMark;
      const source = new Y4mReader(socket, options);
      const frames = [];
      try {
        for await (const f of source) {
          frames.push(f.luma.slice());
          await new Promise((r) => setTimeout(r, pauseEvery ? 5 : 0)); // a slow consumer: the socket backs up
          f.release();
        }
      } finally {
        await source.close();
        server.close();
      }
      assert.equal(frames.length, 6, `case ${i}`);
      frames.forEach((luma, k) => assert.deepEqual(luma, g.luma[k], `case ${i} frame ${k}`));
    }
  });

  it('close() mid-stream kills ffmpeg and leaves no socket folder behind', async () => {
    const before = fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('vmaf-stream-')).length;
    const source = openFfmpegSource(goldenFile('ladder_320x180_300f/ref.mp4'), { poolSlots: 2 });
    const it = source[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(source.directReads, directExpected);
    const pid = source.pid;
    await source.close();
    first.value.release();
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.deepEqual(await it.next(), { done: true, value: undefined });
    const after = fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('vmaf-stream-')).length;
    assert.ok(after <= before, `socket folders: ${before} before, ${after} after`);
  });
});

describe('ffmpeg path', () => {
  it('prefers the option, then FFMPEG_PATH, then @ffmpeg-installer/ffmpeg', async () => {
    const fakeA = writeTmp('ffmpeg-a', Buffer.from('#!/bin/sh\n'));
    const fakeB = writeTmp('ffmpeg-b', Buffer.from('#!/bin/sh\n'));
    fs.chmodSync(fakeA, 0o755);
    fs.chmodSync(fakeB, 0o755);
    assert.equal(await resolveFfmpegPath({ ffmpegPath: fakeA, env: { FFMPEG_PATH: fakeB } }), fakeA);
    assert.deepEqual(await locateFfmpeg({ env: { FFMPEG_PATH: fakeB } }), { path: fakeB, from: 'FFMPEG_PATH' });
    const installed = await locateFfmpeg({ env: {} });
    assert.equal(installed.from, '@ffmpeg-installer/ffmpeg');
    assert.equal(installed.path, installerFfmpegPath());
    fs.accessSync(installed.path, fs.constants.X_OK);
  });

  it('chmods +x a binary that lost its exec bit', async () => {
    const fake = writeTmp('ffmpeg-noexec', Buffer.from('#!/bin/sh\n'));
    fs.chmodSync(fake, 0o644);
    assert.equal(await resolveFfmpegPath({ ffmpegPath: fake }), fake);
    assert.equal(fs.statSync(fake).mode & 0o111, 0o111);
  });

  it('a missing binary is a clear E_FFMPEG error', async () => {
    await assert.rejects(resolveFfmpegPath({ ffmpegPath: path.join(tmp, 'missing-ffmpeg') }), (e) => {
      assertError(e, 'E_FFMPEG', /missing-ffmpeg/, /ffmpegPath option/);
      return true;
    });
    await assert.rejects(resolveFfmpegPath({ env: { FFMPEG_PATH: '/nonexistent/ffmpeg' } }), (e) => {
      assertError(e, 'E_FFMPEG', /\/nonexistent\/ffmpeg/, /FFMPEG_PATH/);
      return true;
    });
    await assert.rejects(resolveFfmpegPath({ ffmpegPath: 'no-such-ffmpeg-command', env: { PATH: tmp } }), (e) => {
      assertError(e, 'E_FFMPEG', /not on the PATH/);
      return true;
    });
  });

  it('finds a bare command name on the PATH', async () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'bin-'));
    const exe = path.join(dir, 'myffmpeg');
    fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o755 });
    assert.equal(await resolveFfmpegPath({ ffmpegPath: 'myffmpeg', env: { PATH: dir } }), exe);
  });
});
