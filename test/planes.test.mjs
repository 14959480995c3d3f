// Frames with every plane (planes: 'all'): the y4m, raw and ffmpeg sources, standard input,
// Readables and named pipes give the same planes, and those are ffmpeg's own rawvideo output,
// for 8/10/12/16 bits, 4:2:0, 4:2:2 and 4:4:4, odd sizes (chroma ceil(w/2) x ceil(h/2)).
// 'luma' stays the luma-only path. A lower-depth distorted input is widened exactly as
// ffmpeg's format filter does (checked value by value against ffmpeg, and on the carried
// hfr clip's 8-bit distorted input: libvmaf's integer features exactly).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { goldenClip, goldenFile } from './helpers/golden.mjs';
import { openFrameSource } from '../dist/decode/open-source.js';
import { openFfmpegSource } from '../dist/decode/ffmpeg-source.js';
import { resolveFfmpegPath } from '../dist/decode/ffmpeg-path.js';
import { chromaSize, ffmpegPixelFormat } from '../dist/decode/frame-layout.js';
import { widenFrame, widenSamples, WidenedSource } from '../dist/decode/bit-depth.js';
import { groupFrames, pairFrames } from '../dist/decode/pair-frames.js';
import { scoreIterator } from '../dist/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let tmp;
let ffmpeg;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vmaf-planes-'));
  ffmpeg = await resolveFfmpegPath();
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A frame's planes as the bytes ffmpeg's rawvideo writes (little-endian above 8 bits). */
function frameBytes(frame) {
  const planes = [frame.luma, ...(frame.chroma ?? [])];
  return Buffer.concat(planes.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
}

async function readAll(source) {
  const frames = [];
  try {
    for await (const f of source) {
      frames.push({ bytes: frameBytes(f), hasChroma: f.chroma !== undefined, format: f.format, luma: Buffer.from(Buffer.from(f.luma.buffer, f.luma.byteOffset, f.luma.byteLength)) }); // a copy: the slot is reused
      f.release();
    }
  } finally {
    await source.close();
  }
  return frames;
}

/** Deterministic samples that use every bit of the depth (so a wrong shift or plane shows). */
function synthRaw({ width, height, chroma, bitDepth, frames }) {
  const c = chromaSize({ width, height, chroma });
  const perFrame = width * height + (c ? 2 * c.width * c.height : 0);
  const samples = bitDepth > 8 ? new Uint16Array(perFrame * frames) : new Uint8Array(perFrame * frames);
  let s = 12345;
  for (let i = 0; i < samples.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    samples[i] = (s >>> 8) % (1 << bitDepth);
  }
  return Buffer.from(samples.buffer);
}

function ff(args) {
  execFileSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** ffmpeg's own rawvideo decode of `file` in `pixFmt` (the ground truth). */
function ffmpegRaw(file, pixFmt) {
  return execFileSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-i', file, '-f', 'rawvideo', '-pix_fmt', pixFmt, 'pipe:1'], { maxBuffer: 1 << 30 });
}

/** A YUV4MPEG2 stream of raw frames in `c`'s format. */
function y4mOf(c, raw) {
  const tag = c.chroma === '400' ? 'mono' : c.chroma === '420' ? '420jpeg' : c.chroma;
  const C = c.bitDepth > 8 ? (c.chroma === '400' ? `mono${c.bitDepth}` : `${c.chroma}p${c.bitDepth}`) : tag;
  const frame = raw.length / c.frames;
  const parts = [Buffer.from(`YUV4MPEG2 W${c.width} H${c.height} F25:1 Ip A1:1 C${C}\n`, 'latin1')];
  for (let i = 0; i < c.frames; i++) parts.push(Buffer.from('FRAME\n', 'latin1'), raw.subarray(i * frame, (i + 1) * frame));
  return Buffer.concat(parts);
}

/** Writes one clip as .yuv, .y4m and .mkv (FFV1, lossless); returns the paths and ffmpeg's rawvideo of the mkv. */
function makeClip(c) {
  const pixFmt = ffmpegPixelFormat(c.chroma, c.bitDepth);
  const base = path.join(tmp, `${c.width}x${c.height}_${c.chroma}_${c.bitDepth}`);
  const yuv = `${base}.yuv`;
  fs.writeFileSync(yuv, synthRaw(c));
  const rawIn = ['-f', 'rawvideo', '-pix_fmt', pixFmt, '-s', `${c.width}x${c.height}`, '-framerate', '25', '-i', yuv];
  // Written here: ffmpeg 4.1's y4m muxer cuts odd-width chroma rows above 8 bits.
  fs.writeFileSync(`${base}.y4m`, y4mOf(c, fs.readFileSync(yuv)));
  ff([...rawIn, '-c:v', 'ffv1', `${base}.mkv`]);
  return { pixFmt, yuv, y4m: `${base}.y4m`, mkv: `${base}.mkv`, raw: fs.readFileSync(yuv), ffmpegRaw: ffmpegRaw(`${base}.mkv`, pixFmt) };
}

function assertFramesEqual(frames, raw, clip, what) {
  const c = chromaSize(clip);
  const bps = clip.bitDepth > 8 ? 2 : 1;
  const size = (clip.width * clip.height + (c ? 2 * c.width * c.height : 0)) * bps;
  assert.equal(frames.length, raw.length / size, `${what}: frame count`);
  frames.forEach((f, i) => {
    assert.ok(f.hasChroma, `${what}: frame ${i} has chroma`);
    assert.ok(f.bytes.equals(raw.subarray(i * size, (i + 1) * size)), `${what}: frame ${i} planes`);
  });
}

const CLIPS = [
  { width: 37, height: 23, chroma: '420', bitDepth: 8, frames: 3 },
  { width: 41, height: 31, chroma: '420', bitDepth: 10, frames: 2 },
  { width: 40, height: 30, chroma: '420', bitDepth: 12, frames: 2 },
  { width: 35, height: 33, chroma: '420', bitDepth: 16, frames: 2 },
  { width: 33, height: 17, chroma: '422', bitDepth: 8, frames: 2 },
  { width: 34, height: 18, chroma: '422', bitDepth: 10, frames: 2 },
  { width: 33, height: 19, chroma: '422', bitDepth: 12, frames: 2 },
  { width: 33, height: 21, chroma: '444', bitDepth: 8, frames: 2 },
  { width: 32, height: 24, chroma: '444', bitDepth: 10, frames: 2 },
  { width: 31, height: 25, chroma: '444', bitDepth: 12, frames: 2 },
];

describe('planes: every plane from every source', function () {
  this.timeout(120000);

  it('chromaSize: ceil at 4:2:0, ceil(w/2) x h at 4:2:2, w x h at 4:4:4, none at 4:0:0', () => {
    assert.deepEqual(chromaSize({ width: 853, height: 479, chroma: '420' }), { width: 427, height: 240 });
    assert.deepEqual(chromaSize({ width: 853, height: 479, chroma: '422' }), { width: 427, height: 479 });
    assert.deepEqual(chromaSize({ width: 853, height: 479, chroma: '444' }), { width: 853, height: 479 });
    assert.equal(chromaSize({ width: 853, height: 479, chroma: '400' }), undefined);
  });

  for (const clip of CLIPS) {
    it(`${clip.width}x${clip.height} ${clip.chroma} ${clip.bitDepth}-bit: y4m, raw, ffmpeg (file and Readable) equal ffmpeg's rawvideo`, async () => {
      const c = makeClip(clip);
      assert.ok(c.raw.equals(c.ffmpegRaw), 'the FFV1 copy is lossless');
      const rawOptions = { width: clip.width, height: clip.height, pixelFormat: clip.chroma, bitDepth: clip.bitDepth, planes: 'all' };
      const sources = {
        y4m: openFrameSource(c.y4m, { planes: 'all' }),
        raw: openFrameSource(c.yuv, rawOptions),
        ffmpeg: openFrameSource(c.mkv, { planes: 'all' }),
        'y4m Readable': openFrameSource(fs.createReadStream(c.y4m), { planes: 'all' }),
        'raw Readable': openFrameSource(fs.createReadStream(c.yuv), rawOptions),
      };
      // ffmpeg's y4m muxer (4.x) cuts odd-width chroma rows above 8 bits: refused, not misread.
      const cut = clip.width % 2 === 1 && clip.bitDepth > 8 && clip.chroma !== '444';
      const unprobed = openFrameSource(fs.createReadStream(c.mkv), { planes: 'all', label: 'piped.mkv' });
      if (cut) {
        await assert.rejects(readAll(unprobed), (e) => e.code === 'E_INPUT_FORMAT' && e.input === 'piped.mkv' && /cuts the last byte of each chroma row/.test(e.message));
        const probed = sources.ffmpeg;
        delete sources.ffmpeg;
        await assert.rejects(readAll(probed), (e) => e.code === 'E_INPUT_FORMAT' && e.input === c.mkv);
      } else {
        sources['mkv Readable (ffmpeg, unprobed)'] = unprobed;
      }
      for (const [what, source] of Object.entries(sources)) {
        const frames = await readAll(source);
        assertFramesEqual(frames, c.ffmpegRaw, clip, what);
        assert.deepEqual({ ...frames[0].format, fps: undefined }, { width: clip.width, height: clip.height, chroma: clip.chroma, bitDepth: clip.bitDepth, fps: undefined }, what);
      }
    });
  }

  it("'luma' (the default) is the luma-only path: no chroma, ffmpeg sends the Y plane alone", async () => {
    const clip = { width: 40, height: 30, chroma: '420', bitDepth: 10, frames: 2 };
    const c = makeClip(clip);
    const lumaBytes = clip.width * clip.height * 2;
    const frameSize = c.raw.length / clip.frames;
    for (const make of [() => openFrameSource(c.y4m), () => openFrameSource(c.yuv, { width: 40, height: 30, bitDepth: 10 }), () => openFrameSource(c.mkv, { planes: 'luma' })]) {
      const frames = await readAll(make());
      assert.equal(frames.length, 2);
      frames.forEach((f, i) => {
        assert.equal(f.hasChroma, false);
        assert.ok(f.luma.equals(c.raw.subarray(i * frameSize, i * frameSize + lumaBytes)));
      });
    }
    const luma = openFfmpegSource(c.mkv, { planes: 'luma' });
    const all = openFfmpegSource(c.mkv, { planes: 'all' });
    await readAll(luma);
    await readAll(all);
    assert.equal(luma.lumaOnly, true);
    assert.match(luma.commandLine, /extractplanes=y/);
    assert.equal(all.lumaOnly, false);
    assert.doesNotMatch(all.commandLine, /extractplanes/);
    assert.match(all.commandLine, /format=pix_fmts=yuv420p10le/);
  });

  it('standard input and a named pipe give every plane', async () => {
    const clip = { width: 37, height: 23, chroma: '420', bitDepth: 8, frames: 3 };
    const c = makeClip(clip);
    const script = `
      import { openFrameSource } from ${JSON.stringify(path.join(ROOT, 'dist/decode/open-source.js'))};
      const out = [];
      for await (const f of openFrameSource('-', { planes: 'all' })) {
        for (const p of [f.luma, ...f.chroma]) out.push(Buffer.from(Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
        f.release();
      }
      process.stdout.write(Buffer.concat(out));`;
    for (const file of [c.y4m, c.mkv]) {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
      const chunks = [];
      child.stdout.on('data', (b) => chunks.push(b));
      fs.createReadStream(file).pipe(child.stdin);
      const code = await new Promise((resolve) => child.on('close', resolve));
      assert.equal(code, 0);
      assert.ok(Buffer.concat(chunks).equals(c.ffmpegRaw), `stdin ${path.extname(file)}`);
    }
    const fifo = path.join(tmp, 'planes.fifo');
    execFileSync('mkfifo', [fifo]);
    const writer = fs.promises.writeFile(fifo, fs.readFileSync(c.y4m));
    const frames = await readAll(openFrameSource(fifo, { planes: 'all' }));
    await writer;
    assertFramesEqual(frames, c.ffmpegRaw, clip, 'named pipe');
  });

  it('odd-size 4:2:0 (the golden mandel_213x121_odd): our y4m reader and the ffmpeg source equal ffmpeg, chroma 107x61', async function () {
    const ref = goldenFile('mandel_213x121_odd/ref.mkv');
    const y4m = path.join(tmp, 'mandel.y4m');
    ff(['-i', ref, '-strict', '-1', '-f', 'yuv4mpegpipe', y4m]);
    const raw = ffmpegRaw(ref, 'yuv420p');
    const clip = { width: 213, height: 121, chroma: '420', bitDepth: 8 };
    assert.equal(raw.length, 3 * (213 * 121 + 2 * 107 * 61));
    for (const [what, source] of [['y4m', openFrameSource(y4m, { planes: 'all' })], ['ffmpeg', openFrameSource(ref, { planes: 'all' })]]) {
      const frames = await readAll(source);
      assertFramesEqual(frames, raw, clip, what);
    }
  });

  it('4:0:0 (gray) asked for chroma: an error naming the input, from every reader', async () => {
    const yuv = path.join(tmp, 'gray.yuv');
    fs.writeFileSync(yuv, Buffer.alloc(40 * 32 * 2, 77));
    const y4m = path.join(tmp, 'gray.y4m');
    const mkv = path.join(tmp, 'gray.mkv');
    ff(['-f', 'rawvideo', '-pix_fmt', 'gray', '-s', '40x32', '-i', yuv, '-strict', '-1', '-f', 'yuv4mpegpipe', y4m]);
    ff(['-f', 'rawvideo', '-pix_fmt', 'gray', '-s', '40x32', '-i', yuv, '-c:v', 'ffv1', mkv]);
    const cases = [
      [y4m, openFrameSource(y4m, { planes: 'all' })],
      [yuv, openFrameSource(yuv, { width: 40, height: 32, pixelFormat: '400', planes: 'all' })],
      [mkv, openFrameSource(mkv, { planes: 'all' })],
    ];
    for (const [label, source] of cases) {
      await assert.rejects(source.format(), (e) => e.code === 'E_INPUT_FORMAT' && e.input === label && /4:0:0 \(gray/.test(e.message) && /no chroma planes/.test(e.message));
      await assert.rejects(readAll(source), (e) => e.code === 'E_INPUT_FORMAT' && e.input === label);
    }
    // 'luma' reads it as before.
    assert.equal((await readAll(openFrameSource(y4m))).length, 2);
    assert.throws(() => openFrameSource(y4m, { planes: 'chroma' }), (e) => e.code === 'E_USAGE' && /'luma' or 'all'/.test(e.message));
  });

  it('memory stays bounded: one pool allocation per slot holds every plane', async () => {
    const clip = { width: 40, height: 30, chroma: '422', bitDepth: 10, frames: 12 };
    const c = makeClip(clip);
    for (const source of [openFrameSource(c.y4m, { planes: 'all', poolSlots: 3 }), openFrameSource(c.mkv, { planes: 'all', poolSlots: 3 })]) {
      const buffers = new Set();
      let n = 0;
      for await (const f of source) {
        buffers.add(f.luma.buffer);
        assert.equal(f.chroma[0].buffer, f.luma.buffer);
        assert.equal(f.chroma[1].buffer, f.luma.buffer);
        assert.equal(f.luma.buffer.byteLength, (40 * 30 + 2 * 20 * 30) * 2);
        f.release();
        n++;
      }
      await source.close();
      assert.equal(n, 12);
      assert.ok(buffers.size <= 3, `${buffers.size} buffers for 3 slots`);
    }
  });
});

describe('planes: a FrameSource given by the caller', () => {
  /** Frames of 64x48 4:2:0 8-bit, with or without chroma planes. */
  function userSource(label, { chroma = 'ok', count = 3 } = {}) {
    const format = { width: 64, height: 48, bitDepth: 8, chroma: '420' };
    let i = 0;
    return {
      label,
      format: async () => format,
      close: async () => {},
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          if (i >= count) return { done: true, value: undefined };
          const frame = { index: i++, format, luma: new Uint8Array(64 * 48).fill(i), release() {} };
          if (chroma === 'ok' || (chroma === 'late' && i < 3)) frame.chroma = [new Uint8Array(32 * 24), new Uint8Array(32 * 24)];
          if (chroma === 'small') frame.chroma = [new Uint8Array(32 * 24), new Uint8Array(10)];
          return { done: false, value: frame };
        },
      }),
    };
  }

  it('frames without chroma, asked for every plane: an error naming the input and the frame', async () => {
    const collect = async (ref, dis, options) => {
      const out = [];
      for await (const p of pairFrames(ref, dis, options)) {
        out.push(p);
        p.ref.release();
        p.dis.release();
      }
      return out;
    };
    assert.equal((await collect(userSource('ref'), userSource('dis'), { planes: 'all' })).length, 3);
    await assert.rejects(collect(userSource('ref'), userSource('mine', { chroma: 'none' }), { planes: 'all' }), (e) => e.code === 'E_INPUT_FORMAT' && e.input === 'mine' && e.frame === 0 && /frame\.chroma is missing/.test(e.message));
    await assert.rejects(collect(userSource('ref'), userSource('mine', { chroma: 'late' }), { planes: 'all' }), (e) => e.input === 'mine' && e.frame === 2);
    await assert.rejects(collect(userSource('ref'), userSource('mine', { chroma: 'small' }), { planes: 'all' }), (e) => e.input === 'mine' && /Cr plane is a Uint8Array of 10 samples/.test(e.message) && /32x24 = 768/.test(e.message));
    // Luma only: taken as they come.
    assert.equal((await collect(userSource('ref'), userSource('mine', { chroma: 'none' }))).length, 3);
  });
});

describe('bit depth: a lower-depth distorted input widened as ffmpeg widens it', function () {
  this.timeout(120000);

  it('every value, every depth pair, luma and chroma: widenFrame equals ffmpeg -vf format=', () => {
    for (const [from, to] of [[8, 10], [8, 12], [8, 16], [10, 12], [10, 16], [12, 16]]) {
      const n = 1 << from;
      const width = 256;
      const height = n / 256 * 2; // every value in luma, and (subsampled) in chroma
      const c = { width: width / 2, height: height / 2 };
      const planes = [width * height, c.width * c.height, c.width * c.height].map((len, p) => {
        const a = from > 8 ? new Uint16Array(len) : new Uint8Array(len);
        for (let i = 0; i < len; i++) a[i] = (i * (p === 0 ? 1 : 3) + p * 7) % n;
        return a;
      });
      const input = path.join(tmp, `every_${from}.yuv`);
      fs.writeFileSync(input, Buffer.concat(planes.map((p) => Buffer.from(p.buffer))));
      const want = execFileSync(ffmpeg, ['-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', ffmpegPixelFormat('420', from), '-s', `${width}x${height}`, '-i', input,
        '-vf', `format=${ffmpegPixelFormat('420', to)}`, '-f', 'rawvideo', 'pipe:1']);
      const frame = { index: 0, format: { width, height, bitDepth: from, chroma: '420' }, luma: planes[0], chroma: [planes[1], planes[2]], release() {} };
      const got = widenFrame(frame, to);
      assert.equal(got.format.bitDepth, to);
      assert.ok(frameBytes(got).equals(want), `${from} -> ${to} bits`);
    }
    // Gray is full range to ffmpeg: the bits repeat below the shift (255 -> 1023).
    const gray = new Uint8Array(256 * 2).map((_, i) => i % 256);
    const input = path.join(tmp, 'every_gray.yuv');
    fs.writeFileSync(input, gray);
    for (const to of [10, 12, 16]) {
      const want = execFileSync(ffmpeg, ['-loglevel', 'error', '-f', 'rawvideo', '-pix_fmt', 'gray', '-s', '256x2', '-i', input, '-vf', `format=${ffmpegPixelFormat('400', to)}`, '-f', 'rawvideo', 'pipe:1']);
      const got = widenFrame({ index: 0, format: { width: 256, height: 2, bitDepth: 8, chroma: '400' }, luma: gray, release() {} }, to);
      assert.ok(frameBytes(got).equals(want), `gray 8 -> ${to} bits`);
    }
    const dst = new Uint16Array(2);
    widenSamples(new Uint8Array([0, 255]), 8, dst, 10);
    assert.deepEqual([...dst], [0, 1020]);
  });

  it("an 8-bit distorted input against a 10-bit reference: every plane equals ffmpeg's format=yuv420p10le, with a warning naming both", async () => {
    const ref = makeClip({ width: 41, height: 33, chroma: '420', bitDepth: 10, frames: 3 });
    const dis = makeClip({ width: 41, height: 33, chroma: '420', bitDepth: 8, frames: 3 });
    const want = execFileSync(ffmpeg, ['-loglevel', 'error', '-i', dis.mkv, '-vf', 'format=yuv420p10le', '-f', 'rawvideo', 'pipe:1']);
    const frameSize = want.length / 3;
    for (const disInput of [dis.y4m, dis.mkv, dis.yuv]) {
      const warnings = [];
      const disOptions = disInput === dis.yuv ? { width: 41, height: 33, planes: 'all', poolSlots: 2 } : { planes: 'all', poolSlots: 2 };
      const buffers = new Set();
      let n = 0;
      for await (const group of groupFrames(openFrameSource(ref.y4m, { planes: 'all' }), [openFrameSource(disInput, disOptions)], { planes: 'all', onWarning: (m) => warnings.push(m) })) {
        const d = group.dis[0];
        assert.equal(d.format.bitDepth, 10);
        assert.ok(frameBytes(d).equals(want.subarray(n * frameSize, (n + 1) * frameSize)), `${disInput}: frame ${n}`);
        buffers.add(d.luma.buffer);
        group.ref.release();
        d.release();
        n++;
      }
      assert.equal(n, 3);
      assert.ok(buffers.size <= 2, 'converted buffers are recycled, bounded by the source pool');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], new RegExp(`${path.basename(disInput).replace('.', '\\.')} is 8-bit and the reference .*41x33_420_10\\.y4m is 10-bit`));
      assert.match(warnings[0], /converted to 10 bits as ffmpeg's format filter/);
    }
  });

  it('a distorted input of higher depth than the reference stays an error', async () => {
    const ref = makeClip({ width: 40, height: 32, chroma: '420', bitDepth: 8, frames: 1 });
    const dis = makeClip({ width: 40, height: 32, chroma: '420', bitDepth: 12, frames: 1 });
    const run = async () => {
      for await (const p of pairFrames(openFrameSource(ref.y4m), openFrameSource(dis.y4m))) {
        p.ref.release();
        p.dis.release();
      }
    };
    await assert.rejects(run(), (e) => e.code === 'E_INPUT_MISMATCH' && e.input === dis.y4m && /bit depth 12 is higher than the reference/.test(e.message) && /never down/.test(e.message));
  });

  // The carried hfr clip's dis-8bit.mkv is its distorted input before ffmpeg's conversion to
  // 10 bits (dis.mkv, what libvmaf scored): the fixtures README says so.
  it("the golden hfr clip's 8-bit distorted input (8-bit AV1 scored at 10 bits): libvmaf's integer features exactly, cpu backend", async function () {
    const clip = goldenClip('hfr_480x270_10bit_60fps');
    const golden = clip.log('libvmaf');
    for (const planes of ['luma', 'all']) {
      const warnings = [];
      let frames = 0;
      let compared = 0;
      for await (const r of scoreIterator(clip.ref, goldenFile('hfr_480x270_10bit_60fps/dis-8bit.mkv'), { backend: 'cpu', planes, onWarning: (m) => warnings.push(m) })) {
        const metrics = golden.frames[r.index].metrics;
        for (const [key, value] of Object.entries(r.features)) {
          if (!key.startsWith('integer_') || !(key in metrics)) continue;
          assert.equal(value, metrics[key], `frame ${r.index} ${key}`);
          compared++;
        }
        assert.equal(r.scores.vmaf, metrics.vmaf, `frame ${r.index} vmaf`);
        frames++;
      }
      assert.equal(frames, golden.frames.length);
      assert.ok(compared >= frames * 12, `${compared} integer features compared`);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /dis-8bit\.mkv is 8-bit and the reference .*ref\.mkv is 10-bit/);
    }
  });
});

describe('planes: the user FrameSource wrapper keeps its planes', () => {
  it('WidenedSource widens chroma too and passes format through', async () => {
    const format = { width: 4, height: 2, bitDepth: 8, chroma: '420' };
    let done = false;
    const source = {
      label: 'tiny',
      format: async () => format,
      close: async () => {},
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          if (done) return { done: true, value: undefined };
          done = true;
          return { done: false, value: { index: 0, format, luma: new Uint8Array([0, 1, 2, 255, 4, 5, 6, 7]), chroma: [new Uint8Array([9, 10]), new Uint8Array([128, 255])], release() {} } };
        },
      }),
    };
    const widened = new WidenedSource(source, 12);
    assert.deepEqual(await widened.format(), { ...format, bitDepth: 12 });
    const frames = [];
    for await (const f of widened) frames.push(f);
    assert.deepEqual([...frames[0].luma], [0, 16, 32, 4080, 64, 80, 96, 112]);
    assert.deepEqual([...frames[0].chroma[0]], [144, 160]);
    assert.deepEqual([...frames[0].chroma[1]], [2048, 4080]);
  });
});
