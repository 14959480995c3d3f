import assert from 'node:assert/strict';
import { goldenDir } from './helpers/env.mjs';
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

const GOLDEN = goldenDir;
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
  it('decodes testsrc dis.mp4: 60 frames, 640x360, 8-bit 4:2:0, pts from the frame rate', async () => {
    const frames = await readAll(openFrameSource(`${GOLDEN}/testsrc_640x360_x264/dis.mp4`));
    assert.equal(frames.length, 60);
    assert.deepEqual(frames[0].format, { width: 640, height: 360, bitDepth: 8, chroma: '420', fps: 25 });
    assert.ok(frames[0].luma instanceof Uint8Array);
    assert.equal(frames[0].luma.length, 640 * 360);
    assert.equal(frames[10].pts, 0.4);
    assert.deepEqual(frames.map((f) => f.index), [...Array(60).keys()]);
  });

  it('keeps 10 bits: src01_576x324_10bit/ref.mkv', async () => {
    const source = openFfmpegSource(`${GOLDEN}/src01_576x324_10bit/ref.mkv`);
    const frames = await readAll(source);
    assert.equal(source.requestedPixelFormat, 'yuv420p10le');
    assert.equal(frames.length, 3);
    assert.deepEqual(frames[0].format, { width: 576, height: 324, bitDepth: 10, chroma: '420', fps: 25 });
    assert.ok(frames[0].luma instanceof Uint16Array);
    const max = frames[0].luma.reduce((m, v) => (v > m ? v : m), 0);
    assert.ok(max > 255 && max <= 1023, `max ${max}`);
  });

  it('keeps 12-bit 4:4:4 at an odd size: rgbtest_301x199_444_12bit', async () => {
    const frames = await readAll(openFrameSource(`${GOLDEN}/rgbtest_301x199_444_12bit/dis.mkv`));
    assert.equal(frames.length, 5);
    assert.deepEqual(frames[0].format, { width: 301, height: 199, bitDepth: 12, chroma: '444', fps: 25 });
    const max = frames[0].luma.reduce((m, v) => (v > m ? v : m), 0);
    assert.ok(max > 1023 && max <= 4095, `max ${max}`);
  });

  it('decodes a y4m to exactly the luma the native reader reads', async () => {
    const file = `${GOLDEN}/src01_160x90_8bit/ref.y4m`;
    const viaFfmpeg = await readAll(openFfmpegSource(file));
    const native = await readAll(openY4m(file));
    assert.equal(viaFfmpeg.length, 48);
    assert.equal(native.length, 48);
    for (let i = 0; i < 48; i++) assert.deepEqual(viaFfmpeg[i].luma, native[i].luma, `frame ${i}`);
  });

  it('scales with scaleTo (bicubic), even a y4m', async () => {
    const source = openFrameSource(`${GOLDEN}/src01_160x90_8bit/dis.y4m`, { scaleTo: { width: 80, height: 46 } });
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
    const y4m = `${GOLDEN}/src01_160x90_8bit/dis.y4m`;
    const piped = await readAll(openFrameSource(fs.createReadStream(y4m), { label: 'piped-y4m' }));
    const native = await readAll(openY4m(y4m));
    assert.equal(piped.length, 48);
    assert.deepEqual(piped[47].luma, native[47].luma);

    const mkv = await readAll(openFrameSource(fs.createReadStream(`${GOLDEN}/testsrc_640x360_x264/ref.mkv`), { label: 'piped-mkv' }));
    assert.equal(mkv.length, 60);
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
    const a = await run(`${GOLDEN}/src01_160x90_8bit/ref.y4m`);
    assert.equal(a.n, 48);
    assert.deepEqual(a.format, { width: 160, height: 90, bitDepth: 8, chroma: '420', fps: 25 });
    const b = await run(`${GOLDEN}/src01_576x324_10bit/dis.mkv`);
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
    feed(fifo1, `${GOLDEN}/src01_160x90_8bit/ref.y4m`);
    const a = await readAll(openFrameSource(fifo1));
    assert.equal(a.length, 48);

    const fifo2 = path.join(tmp, 'pipe-any');
    execFileSync('mkfifo', [fifo2]);
    feed(fifo2, `${GOLDEN}/src01_576x324_8bit/ref.mkv`);
    const b = await readAll(openFrameSource(fifo2));
    assert.equal(b.length, 3);
    assert.deepEqual(b[0].format, { width: 576, height: 324, bitDepth: 8, chroma: '420', fps: 25 });
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
    const source = openFfmpegSource(`${GOLDEN}/ladder_320x180_300f/ref.mp4`, { poolSlots: 2 });
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
    const { error } = await readUntilError(openFrameSource(`${GOLDEN}/testsrc_640x360_x264/dis.mp4`, { ffmpegPath: path.join(tmp, 'no-ffmpeg') }));
    assertError(error, 'E_FFMPEG', /no-ffmpeg/);
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
