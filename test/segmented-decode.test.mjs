// Several ffmpeg decoders over keyframe segments of one compressed file (SegmentedFfmpegSource,
// --decoders): every frame byte-identical to one decoder's (index, pts, every plane), on clips
// made here with the bundled ffmpeg: H.264 with B-frames (closed GOP, in MP4 and in MPEG-TS
// whose first pts is not 0), H.264 with open GOPs and variable frame rate (one decoder runs:
// shown identical too), HEVC 10-bit with open GOPs (CRA) at an odd size, H.264 4:4:4 at an
// odd size, 10-bit H.264 with a start offset. Whole JSON logs of the CLI byte-identical with
// 1 and 3 decoders; --frame_cnt stops early; a killed or stopped decoder is an error naming
// the input and frame; no ffmpeg is left behind (SIGINT included).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { resolveFfmpegPath } from '../dist/decode/ffmpeg-path.js';
import { FfmpegSource } from '../dist/decode/ffmpeg-source.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { SegmentedFfmpegSource } from '../dist/decode/segmented-source.js';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../dist/index.js';
import { childrenOf, commandLine, running } from './helpers/processes.mjs';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));

/** Our ffmpeg decoders (children writing y4m), as /proc sees them now. */
function decoders(pid = process.pid) {
  return childrenOf(pid).filter((p) => running(p) && commandLine(p).includes('yuv4mpegpipe'));
}

async function frameHashes(source) {
  const out = [];
  try {
    for await (const f of source) {
      const h = createHash('sha1');
      for (const p of [f.luma, ...(f.chroma ?? [])]) h.update(Buffer.from(p.buffer, p.byteOffset, p.byteLength));
      out.push(`${f.index} ${f.pts} ${f.format.width}x${f.format.height}/${f.format.bitDepth}/${f.format.chroma} ${h.digest('hex')}`);
      f.release();
    }
  } finally {
    await source.close();
  }
  return out;
}


/** Waits (polling, at most 10 s) until cond() holds; the caller's assertions then say what is wrong. */
async function until(cond, ms = 10_000) {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await sleep(50);
}

describe('several decoders over segments of a compressed file', function () {
  this.timeout(120000);
  let ffmpeg;
  let dir;
  const clip = (name) => join(dir, name);
  const encode = (name, args) => {
    const r = spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', ...args, clip(name)], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  };

  before(async () => {
    ffmpeg = await resolveFfmpegPath();
    dir = mkdtempSync(join(tmpdir(), 'vmaf-segments-'));
    const src = (size, rate, frames) => ['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=${rate}`, '-frames:v', String(frames)];
    const x264 = (extra) => ['-c:v', 'libx264', '-preset', 'ultrafast', '-bf', '3', '-g', '10', '-x264-params', `scenecut=0${extra}`];
    encode('closed.mp4', [...src('160x90', 25, 70), ...x264('')]);
    encode('closed-start.ts', [...src('160x90', 24, 70), ...x264(''), '-f', 'mpegts']);
    encode('open.mp4', [...src('160x90', 25, 60), ...x264(':open-gop=1')]);
    encode('vfr.mkv', [...src('160x90', 25, 60), '-vf', "setpts='(N+if(gt(N,30),N*0.4,0))/25/TB'", '-vsync', 'vfr', ...x264('')]);
    encode('hevc10.mkv', [...src('176x100', '30000/1001', 60), '-vf', 'scale=177:99', '-pix_fmt', 'yuv444p10le', '-c:v', 'libx265', '-preset', 'ultrafast',
      '-x265-params', 'keyint=12:min-keyint=12:bframes=3:open-gop=1:log-level=error']);
    encode('odd444.mp4', [...src('160x90', 25, 50), '-vf', 'scale=161:91', '-pix_fmt', 'yuv444p', ...x264('')]);
    encode('offset10.mp4', [...src('160x90', 25, 50), '-pix_fmt', 'yuv420p10le', ...x264(''), '-output_ts_offset', '3.3']);
    // Natural content, open GOPs, temporal direct, in MPEG-TS: a seek to a keyframe's pts lands
    // after its packet (ffmpeg then starts at the next keyframe), and a decoder started at an
    // open-GOP I frame decodes later B frames differently; fixed by keyframeAt.
    encode('open-natural.ts', ['-i', goldenClip('ladder_320x180_300f').ref, '-frames:v', '120', '-c:v', 'libx264', '-preset', 'medium', '-g', '24',
      '-x264-params', 'scenecut=0:open-gop=1:bf=3:direct=temporal:ref=5']);
    // An ffmpeg whose packet list takes 3 s (a long file on a slow disk).
    writeFileSync(clip('slow-ffmpeg.sh'), `#!/bin/sh\ncase "$*" in *framecrc*) sleep 3;; esac\nexec '${ffmpeg}' "$@"\n`);
    chmodSync(clip('slow-ffmpeg.sh'), 0o755);
    // A lower-quality rendition of closed.mp4, and a longer clip for the stop tests.
    encode('closed-dis.mp4', ['-i', clip('closed.mp4'), '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '40', '-bf', '3', '-g', '10', '-x264-params', 'scenecut=0']);
    encode('long.mp4', [...src('320x180', 25, 600), ...x264('')]);
    // GOPs of 50 frames: a decoder ahead fills its few pool slots and waits, still running.
    encode('longgop.mp4', [...src('320x180', 25, 600), '-c:v', 'libx264', '-preset', 'ultrafast', '-bf', '3', '-g', '50', '-x264-params', 'scenecut=0']);
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  const cases = [
    ['H.264 B-frames, closed GOP, MP4', 'closed.mp4', 'all', true],
    ['H.264 B-frames in MPEG-TS, first pts 1.4 s', 'closed-start.ts', 'all', true],
    ['HEVC 10-bit 4:4:4 177x99, open GOPs (CRA)', 'hevc10.mkv', 'all', true],
    ['H.264 4:4:4 161x91', 'odd444.mp4', 'all', true],
    ['H.264 10-bit, start offset 3.3 s, luma', 'offset10.mp4', 'luma', true],
    ['H.264 open GOPs (each decoder from the keyframe before its own)', 'open.mp4', 'luma', true],
    ['H.264 open GOPs, temporal direct, natural content, MPEG-TS', 'open-natural.ts', 'all', true],
    ['variable frame rate (one decoder)', 'vfr.mkv', 'all', false],
  ];
  for (const [title, name, planes, splits] of cases) {
    it(`${title}: every frame identical to one decoder's`, async () => {
      const one = await frameHashes(new FfmpegSource(clip(name), { planes }));
      const seg = new SegmentedFfmpegSource(clip(name), { planes, decoders: 3, aheadFrames: 4 });
      // Cut before reading: the first decoder, started before the packet list, holds a pool's
      // worth of frames by then (its segment takes in the next ones where it passed them).
      await seg.segmented();
      let most = 0;
      const many = [];
      try {
        for await (const f of seg) {
          const h = createHash('sha1');
          for (const p of [f.luma, ...(f.chroma ?? [])]) h.update(Buffer.from(p.buffer, p.byteOffset, p.byteLength));
          many.push(`${f.index} ${f.pts} ${f.format.width}x${f.format.height}/${f.format.bitDepth}/${f.format.chroma} ${h.digest('hex')}`);
          f.release();
          most = Math.max(most, decoders().length);
        }
      } finally {
        await seg.close();
      }
      assert.ok(one.length >= 50, `${one.length} frames`);
      assert.equal(many.length, one.length);
      assert.deepEqual(many, one);
      if (splits) {
        assert.equal(seg.decodersUsed, 3, seg.fallbackReason);
        assert.ok(seg.segmentStarts.length >= 4, String(seg.segmentStarts));
        assert.ok(seg.decoderPids.length === seg.segmentStarts.length, 'one decoder per segment');
        assert.ok(most <= 3, `at most 3 decoders at once, saw ${most}`);
      } else {
        assert.equal(seg.decodersUsed, 1);
        assert.match(seg.fallbackReason, /variable/);
      }
      assert.deepEqual(decoders(), [], 'no decoder left');
    });
  }

  it('the first frame does not wait for the packet list; the first decoder is stopped at its segment\'s end once the list is read', async () => {
    const slow = clip('slow-ffmpeg.sh');
    const one = await frameHashes(new FfmpegSource(clip('long.mp4'), { planes: 'all' }));
    for (const readAll of [false, true]) {
      const seg = new SegmentedFfmpegSource(clip('long.mp4'), { planes: 'all', decoders: 3, aheadFrames: 4, ffmpegPath: slow });
      const many = [];
      let cutAtFirst;
      try {
        for await (const f of seg) {
          if (many.length === 0) cutAtFirst = seg.segmentStarts;
          const h = createHash('sha1');
          for (const p of [f.luma, ...(f.chroma ?? [])]) h.update(Buffer.from(p.buffer, p.byteOffset, p.byteLength));
          many.push(`${f.index} ${f.pts} ${f.format.width}x${f.format.height}/${f.format.bitDepth}/${f.format.chroma} ${h.digest('hex')}`);
          f.release();
          // Not reading: the first decoder stops at its pool, well inside the first segments.
          if (!readAll && many.length === 1) await seg.segmented();
        }
        await seg.segmented();
      } finally {
        await seg.close();
      }
      assert.equal(cutAtFirst, undefined, 'the first frame came before the file was cut');
      assert.deepEqual(many, one);
      if (readAll) {
        // Read while the list was awaited: the first segment took in those the first decoder passed.
        assert.ok(seg.decodersUsed === 1 || seg.segmentStarts[1] > 10, `${seg.decodersUsed} ${seg.segmentStarts}`);
      } else {
        assert.equal(seg.decodersUsed, 3, seg.fallbackReason);
        assert.ok(seg.segmentStarts.length > 10 && seg.segmentStarts[1] <= 20, String(seg.segmentStarts));
      }
      await sleep(200);
      assert.deepEqual(decoders(), [], 'no decoder left');
    }
  });

  it('a run that ends before the packet list is read stops the listing too', async () => {
    const slow = clip('slow-ffmpeg.sh');
    const seg = new SegmentedFfmpegSource(clip('long.mp4'), { decoders: 3, aheadFrames: 4, ffmpegPath: slow });
    const it = seg[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) (await it.next()).value.release();
    const listing = () => childrenOf(process.pid).filter((p) => running(p) && /slow-ffmpeg|framecrc/.test(commandLine(p)));
    assert.equal(listing().length, 1, 'the packet list is being read');
    await it.return();
    await sleep(200);
    assert.deepEqual(listing(), [], 'no listing left');
    assert.deepEqual(decoders(), [], 'no decoder left');
    assert.equal(seg.segmentStarts, undefined, 'never cut');
  });

  it('openFrameSource({ decoders }) picks the segmented source for a local compressed file only', async () => {
    const a = openFrameSource(clip('closed.mp4'), { decoders: 2, planes: 'all' });
    assert.deepEqual(await frameHashes(a), await frameHashes(new FfmpegSource(clip('closed.mp4'), { planes: 'all' })));
    assert.throws(() => openFrameSource(clip('closed.mp4'), { decoders: 0 }), /decoders must be 'auto' or a whole number from 1 to 64/);
  });

  it('the CLI: whole JSON log byte-identical with --decoders 1 and 3 (and --frame_cnt stops early)', () => {
    const run = (extra, out) => {
      const r = spawnSync(process.execPath, [BIN, '-r', clip('closed.mp4'), '-d', clip('closed-dis.mp4'), '--backend', 'cpu', '--threads', '2', '--json', '-o', out, '-q', ...extra], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return readFileSync(out, 'utf8');
    };
    const one = run(['--decoders', '1'], clip('one.json'));
    const three = run(['--decoders', '3'], clip('three.json'));
    assert.equal(JSON.parse(one).frames.length, 70);
    assert.equal(three, one);
    const cutOne = run(['--decoders', '1', '--frame_cnt', '13'], clip('cut1.json'));
    const cutThree = run(['--decoders', '3', '--frame_cnt', '13'], clip('cut3.json'));
    assert.equal(JSON.parse(cutOne).frames.length, 13);
    assert.equal(cutThree, cutOne);
    const bad = spawnSync(process.execPath, [BIN, '-r', 'a.mp4', '-d', 'b.mp4', '--decoders', '0'], { encoding: 'utf8' });
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /--decoders needs an integer from 1 to 64/);
  });

  it('the library: decoders and ffmpegInputOptions (-hwaccel auto) give the same scores; frameCnt stops every decoder', async () => {
    const pooled = async (options) => {
      const results = await lastValueFrom(score(clip('closed.mp4'), clip('closed-dis.mp4'), { backend: 'cpu', threads: 2, ...options }).pipe(toArray()));
      return results.map((r) => ({ index: r.index, features: r.features, scores: r.scores, refPts: r.refPts, disPts: r.disPts }));
    };
    const one = await pooled({ decoders: 1 });
    assert.deepEqual(await pooled({ decoders: 3 }), one);
    assert.deepEqual(await pooled({ decoders: 2, ffmpegInputOptions: ['-hwaccel', 'auto'] }), one);
    // libvmaf's motion2 of the last frame scored differs: compare with one decoder's early stop.
    assert.deepEqual(await pooled({ decoders: 3, frameCnt: 5 }), await pooled({ decoders: 1, frameCnt: 5 }));
    await sleep(300); // a decoder killed as the run ends may not be reaped yet
    assert.deepEqual(decoders(), [], 'no decoder left after an early stop');
  });

  it('a decoder killed ahead of the reader: an error naming the input and its frame when reached, every decoder stopped', async () => {
    const seg = new SegmentedFfmpegSource(clip('longgop.mp4'), { decoders: 3, aheadFrames: 4, poolSlots: 2 });
    await seg.segmented();
    const it = seg[Symbol.asyncIterator]();
    const first = await it.next();
    first.value.release();
    // The third segment's decoder (ahead, waiting on its pool), once it has started: a loaded
    // machine can take longer than a fixed pause to spawn three ffmpegs.
    await until(() => seg.decoderPids.filter(running).length === 3);
    const victim = seg.decoderPids[2];
    assert.ok(victim && running(victim), 'the decoder ahead waits, still running (backpressure)');
    assert.equal(seg.decoderPids.filter(running).length, 3);
    process.kill(victim, 'SIGKILL');
    const start = seg.segmentStarts[2];
    let error;
    let last = -1;
    try {
      for (;;) {
        const step = await it.next();
        if (step.done) break;
        last = step.value.index;
        step.value.release();
      }
    } catch (err) {
      error = err;
    }
    await seg.close();
    assert.ok(error, 'the run fails');
    assert.equal(error.input, clip('longgop.mp4'));
    assert.ok(error.frame >= start && error.frame < seg.segmentStarts[3], `frame ${error.frame} in the third segment (from ${start})`);
    assert.equal(last, error.frame - 1, 'every frame before it was read, in order');
    assert.match(error.message, /ffmpeg was killed with signal SIGKILL while decoding it, after \d+ frames/);
    assert.deepEqual(decoders(), []);
  });

  it('the decoder being read stops (SIGSTOP) with a stall timeout: E_INPUT_STALLED naming input and frame, every decoder killed', async () => {
    const seg = new SegmentedFfmpegSource(clip('longgop.mp4'), { decoders: 3, aheadFrames: 4, poolSlots: 2, stallTimeoutMs: 1000 });
    await seg.segmented();
    const it = seg[Symbol.asyncIterator]();
    const first = await it.next();
    first.value.release();
    await until(() => seg.decoderPids.filter(running).length === 3);
    const pids = [...seg.decoderPids];
    process.kill(pids[0], 'SIGSTOP');
    let error;
    let last = 0;
    try {
      for (;;) {
        const step = await it.next();
        if (step.done) break;
        last = step.value.index;
        step.value.release();
      }
    } catch (err) {
      error = err;
    }
    assert.equal(error?.code, 'E_INPUT_STALLED', String(error));
    assert.equal(error.frame, last + 1);
    assert.match(error.message, /no frame for 1 s \(the stall timeout\)/);
    await seg.close();
    await sleep(200);
    for (const pid of pids) assert.ok(!running(pid), `decoder ${pid} stopped`);
    assert.deepEqual(decoders(), []);
  });

  it('SIGINT to the CLI with 3 decoders: exit 130, no ffmpeg left', async () => {
    const out = clip('int.json');
    const cli = spawn(process.execPath, [BIN, '-r', clip('long.mp4'), '-d', clip('long.mp4'), '--backend', 'cpu', '--threads', '1', '--decoders', '3', '--json', '-o', out, '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    cli.stderr.setEncoding('utf8').on('data', (t) => (stderr += t));
    const exited = new Promise((resolve) => cli.on('exit', (code) => resolve(code)));
    const seen = new Set();
    for (let i = 0; i < 100 && seen.size < 4; i++) {
      for (const pid of decoders(cli.pid)) seen.add(pid);
      await sleep(50);
    }
    assert.ok(seen.size >= 4, `several decoders seen (${seen.size})`);
    cli.kill('SIGINT');
    const code = await exited;
    assert.equal(code, 130, stderr);
    await sleep(200);
    for (const pid of seen) assert.ok(!running(pid), `ffmpeg ${pid} left running`);
  });
});
