// A ladder: one reference against several renditions, the reference decoded once. Each
// rendition's results and logs equal its own single-pair run bit for bit (x264 at two
// qualities, a downscaled rendition scaled back, a shorter one, --subsample); the
// reference's frames are read once and released once whatever the number of renditions;
// the gpu ladder equals the cpu ladder bit for bit; the CLI's -d repeated, -o patterns,
// combined NDJSON and its usage errors; groupFrames' own semantics.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastValueFrom, toArray } from 'rxjs';
import { score, scoreLadder, scoreLadderIterator, scoreLadderEvents, openFrameSource, groupFrames } from '../dist/index.js';
import { parseDistorted } from '../dist/cli/run-args.js';
import { UploadSlot } from '../dist/pool/staging-ring.js';
import { countingSource } from './helpers/counting-source.mjs';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const FFMPEG = process.env.FFMPEG_PATH ?? createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
const REF = goldenClip('src01_160x90_8bit').ref;
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-ladder-'));
const MODEL = 'version=vmaf_v0.6.1:name=vmaf';

/** Encodes the reference with ffmpeg into tmp/<name>. */
function encode(name, args) {
  const out = join(tmp, name);
  const r = spawnSync(FFMPEG, ['-y', '-hide_banner', '-loglevel', 'error', '-i', REF, ...args, out], { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, `ffmpeg ${name}: ${r.stderr}`);
  return out;
}

function cli(args, options = {}) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300000, ...options });
}

/** Every value of every frame the same, bit for bit (Object.is). */
function assertSameResults(got, want, what) {
  assert.equal(got.length, want.length, `${what}: ${got.length} frames, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const g = got[i];
    const w = want[i];
    assert.equal(g.index, w.index, `${what}: frame ${i} index`);
    assert.deepEqual(Object.keys(g.features), Object.keys(w.features), `${what}: frame ${i} feature names`);
    for (const [k, v] of Object.entries(w.features)) assert.ok(Object.is(g.features[k], v), `${what}: frame ${w.index} ${k}: ${g.features[k]} vs ${v}`);
    for (const [k, v] of Object.entries(w.scores)) assert.ok(Object.is(g.scores[k], v), `${what}: frame ${w.index} ${k}: ${g.scores[k]} vs ${v}`);
    assert.equal(g.refPts, w.refPts, `${what}: frame ${i} refPts`);
    assert.equal(g.disPts, w.disPts, `${what}: frame ${i} disPts`);
  }
}

const byRendition = (results) => {
  const map = new Map();
  for (const { rendition, result } of results) {
    if (!map.has(rendition)) map.set(rendition, []);
    map.get(rendition).push(result);
  }
  return map;
};

/** The log without its fps line (a measured speed). */
const withoutFps = (text) => text.split('\n').filter((line) => !/^\s*"fps":/.test(line)).join('\n');

describe('ladder', function () {
  let low; // x264 crf 35
  let high; // x264 crf 22
  let small; // 80x46, scaled back to 160x90 by the ladder
  let short; // the first 30 frames, crf 28
  let tiny; // the first 4 frames

  before(function () {
    low = encode('low.mp4', ['-c:v', 'libx264', '-crf', '35', '-pix_fmt', 'yuv420p']);
    high = encode('high.mp4', ['-c:v', 'libx264', '-crf', '22', '-pix_fmt', 'yuv420p']);
    small = encode('small.mp4', ['-vf', 'scale=80:46', '-c:v', 'libx264', '-crf', '25', '-pix_fmt', 'yuv420p']);
    short = encode('short.mp4', ['-frames:v', '30', '-c:v', 'libx264', '-crf', '28', '-pix_fmt', 'yuv420p']);
    tiny = encode('tiny.mp4', ['-frames:v', '4', '-c:v', 'libx264', '-crf', '28', '-pix_fmt', 'yuv420p']);
  });

  describe('library (cpu backend)', function () {
    it("gives each rendition exactly its own single-pair run's results, the reference read once and released once", async function () {
      const warnings = [];
      const { source, stats } = countingSource(openFrameSource(REF, { poolSlots: 8 }));
      const options = { backend: 'cpu', threads: 2, models: [MODEL], maxFramesInFlight: 6 };
      const ladder = await lastValueFrom(
        scoreLadder(source, [low, { input: high, name: 'hi' }, small, short], { ...options, onWarning: (m) => warnings.push(m) }).pipe(toArray()),
      );
      // The reference: every frame read once (not once per rendition), released once.
      assert.equal(stats.read, 48);
      assert.equal(stats.released, 48);
      assert.equal(stats.doubleReleases, 0);
      assert.ok(stats.maxOut <= 8, `at most the pool's frames out at once (${stats.maxOut})`);

      // In frame order, each frame's renditions in the order given.
      assert.deepEqual(ladder.slice(0, 4).map((r) => `${r.rendition}:${r.result.index}`), ['low:0', 'hi:0', 'small:0', 'short:0']);
      assert.deepEqual(ladder.slice(-3).map((r) => `${r.rendition}:${r.result.index}`), ['low:47', 'hi:47', 'small:47']);
      const got = byRendition(ladder);
      assert.deepEqual([...got.keys()], ['low', 'hi', 'small', 'short']);

      for (const [name, input, scale] of [['low', low, false], ['hi', high, false], ['small', small, true], ['short', short, false]]) {
        const single = await lastValueFrom(score(REF, input, { ...options, scale }).pipe(toArray()));
        assertSameResults(got.get(name), single, name);
      }
      assert.equal(got.get('short').length, 30);
      assert.ok(warnings.some((m) => /short\.mp4 ended before .*ref\.y4m: .*short\.mp4 has 30 frames, .*ref\.y4m has 48; scored the first 30 frames of each/.test(m)), warnings.join('\n'));
    });

    it('with --subsample and a frame count, each rendition equals its own run (no stall on unscored frames)', async function () {
      const options = { backend: 'cpu', threads: 2, models: [MODEL], subsample: 3, frameCnt: 40, maxFramesInFlight: 4 };
      const got = byRendition(await lastValueFrom(scoreLadder(REF, [low, short], options).pipe(toArray())));
      for (const [name, input] of [['low', low], ['short', short]]) {
        const single = await lastValueFrom(score(REF, input, options).pipe(toArray()));
        assertSameResults(got.get(name), single, name);
      }
      assert.deepEqual(got.get('low').map((r) => r.index), [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39]);
    });

    it('per-rendition frame skips, and the iterator and event views', async function () {
      const options = { backend: 'cpu', threads: 2, models: [MODEL], frameCnt: 6 };
      const seen = [];
      for await (const r of scoreLadderIterator(REF, [{ input: low, name: 'a' }, { input: low, name: 'b', frameSkip: 2 }], options)) seen.push(r);
      const got = byRendition(seen);
      assertSameResults(got.get('a'), await lastValueFrom(score(REF, low, options).pipe(toArray())), 'a');
      assertSameResults(got.get('b'), await lastValueFrom(score(REF, low, { ...options, frameSkipDist: 2 }).pipe(toArray())), 'b');

      const summaries = await new Promise((resolve, reject) => {
        const frames = [];
        scoreLadderEvents(REF, [low, high], options)
          .on('frame', (f) => frames.push(f))
          .on('end', (s) => resolve({ s, frames }))
          .on('error', reject);
      });
      assert.deepEqual(Object.keys(summaries.s), ['low', 'high']);
      assert.equal(summaries.s.low.frameCount, 6);
      assert.equal(summaries.frames.length, 12);
      const mean = got.get('a').reduce((sum, r) => sum + r.scores.vmaf, 0) / 6;
      assert.ok(Math.abs(summaries.s.low.pooled.vmaf.mean - mean) < 1e-9);
    });

    it('rejects duplicate rendition names with a UsageError, and a size mismatch with scale off', async function () {
      await assert.rejects(lastValueFrom(scoreLadder(REF, [low, low], { backend: 'cpu' })), (e) => e.code === 'E_USAGE' && /both named "low"/.test(e.message));
      await assert.rejects(
        lastValueFrom(scoreLadder(REF, [{ input: low, name: 'x' }, { input: high, name: 'x' }], { backend: 'cpu' })),
        (e) => e.code === 'E_USAGE' && /names must be unique/.test(e.message),
      );
      await assert.rejects(lastValueFrom(scoreLadder(REF, [low, small], { backend: 'cpu', scale: false })), (e) => e.code === 'E_INPUT_MISMATCH' && /80x46/.test(e.message));
      // One pair keeps today's behaviour: a size mismatch is an error unless scale is on.
      await assert.rejects(lastValueFrom(score(REF, small, { backend: 'cpu' })), (e) => e.code === 'E_INPUT_MISMATCH');
    });
  });

  describe('gpu backend', function () {
    it('the gpu ladder equals the cpu ladder bit for bit, the reference uploaded once per frame', async function () {
      let gpu;
      try {
        const { GpuBackend } = await import('../dist/kernels/gpu/gpu-backend.js');
        gpu = await GpuBackend.open({});
        await gpu.close();
      } catch (error) {
        this.skip(); // no WebGPU adapter here (not even lavapipe)
      }
      // Tiny: a software adapter is slow. A rendition of 4 frames ends before the others.
      const options = { threads: 2, models: [MODEL], frameCnt: 6 };
      const renditions = [low, { input: high, name: 'hi' }, small, tiny];
      const cpu = await lastValueFrom(scoreLadder(REF, renditions, { ...options, backend: 'cpu' }).pipe(toArray()));
      const { source, stats } = countingSource(openFrameSource(REF, { poolSlots: 8 }));
      // Count the host -> GPU uploads: one reference and each rendition present per frame,
      // all of a frame's pictures in one staging slot (one write per frame).
      const write = UploadSlot.prototype.writeRegionsAsync;
      let uploads = 0;
      let slotWrites = 0;
      UploadSlot.prototype.writeRegionsAsync = function (regions, copy) {
        slotWrites++;
        uploads += regions.length;
        return write.call(this, regions, copy);
      };
      let gpuRun;
      // The staging ring counted here is this thread's: the backend stays on it (no gpu thread).
      process.env.VMAF_STREAM_GPU_THREAD = '0';
      try {
        gpuRun = await lastValueFrom(scoreLadder(source, renditions, { ...options, backend: 'gpu' }).pipe(toArray()));
      } finally {
        UploadSlot.prototype.writeRegionsAsync = write;
        delete process.env.VMAF_STREAM_GPU_THREAD;
      }
      assert.equal(uploads, 6 * (1 + 3) + 4, 'the reference is uploaded once per frame, not once per rendition');
      assert.equal(slotWrites, 6, "a frame's pictures share one staging slot");
      assert.deepEqual(gpuRun.map((r) => `${r.rendition}:${r.result.index}`), cpu.map((r) => `${r.rendition}:${r.result.index}`));
      const g = byRendition(gpuRun);
      for (const [name, results] of byRendition(cpu)) assertSameResults(g.get(name), results, `gpu ${name}`);
      assert.equal(g.get('tiny').length, 4);
      assert.equal(stats.read, 6);
      assert.equal(stats.released, 6);
      assert.equal(stats.doubleReleases, 0);
    });
  });

  describe('command line', function () {
    it('-d repeated with -o {name}: one log per rendition, each byte-identical to its single-pair log (fps aside)', function () {
      const dir = mkdtempSync(join(tmp, 'logs-'));
      const common = ['-r', REF, '--backend', 'cpu', '--threads', '2', '--json', '--precision', '17', '-m', MODEL];
      const r = cli([...common, '-d', low, '-d', `name=hi:path=${high}`, '-d', small, '-o', join(dir, '{name}.json')]);
      assert.equal(r.status, 0, r.stderr);
      // Pooled scores per rendition per model.
      assert.match(r.stderr, /^low: vmaf: \d+\.\d{6}$/m);
      assert.match(r.stderr, /^hi: vmaf: \d+\.\d{6}$/m);
      assert.match(r.stderr, /^small: vmaf: \d+\.\d{6}$/m);
      for (const [name, input, extra] of [['low', low, []], ['hi', high, []], ['small', small, ['--scale']]]) {
        const single = join(dir, `${name}.single.json`);
        const s = cli([...common, '-d', input, ...extra, '-o', single, '-q']);
        assert.equal(s.status, 0, s.stderr);
        const ladderLog = readFileSync(join(dir, `${name}.json`), 'utf8');
        assert.equal(JSON.parse(ladderLog).frames.length, 48);
        assert.equal(withoutFps(ladderLog), withoutFps(readFileSync(single, 'utf8')), `${name}: the ladder's log differs from the single-pair log`);
      }
    });

    it('--ndjson with one -o: one combined stream whose lines name their rendition', function () {
      const r = cli(['-r', REF, '-d', low, '-d', `name=hi:path=${high}`, '--backend', 'cpu', '--ndjson', '-o', '-', '-q', '--frame_cnt', '4']);
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
      const frames = lines.filter((l) => 'frameNum' in l);
      assert.deepEqual(frames.map((l) => `${l.rendition}:${l.frameNum}`), ['low:0', 'hi:0', 'low:1', 'hi:1', 'low:2', 'hi:2', 'low:3', 'hi:3']);
      const summaries = lines.filter((l) => 'pooled_metrics' in l);
      assert.deepEqual(summaries.map((l) => l.rendition), ['low', 'hi']);
      assert.ok(lines.every((l) => Object.keys(l)[0] === 'rendition'));
      // Each rendition's lines are its single-pair NDJSON, plus the rendition.
      const single = cli(['-r', REF, '-d', high, '--backend', 'cpu', '--ndjson', '-o', '-', '-q', '--frame_cnt', '4']);
      const want = single.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => 'frameNum' in l);
      assert.deepEqual(frames.filter((l) => l.rendition === 'hi').map(({ rendition, ...rest }) => rest), want);
    });

    it('a combined NDJSON file; an NDJSON pattern writes untagged per-rendition files', function () {
      const dir = mkdtempSync(join(tmp, 'nd-'));
      const combined = join(dir, 'all.ndjson');
      let r = cli(['-r', REF, '-d', low, '-d', high, '--backend', 'cpu', '--ndjson', '-o', combined, '--frame_cnt', '3']);
      assert.equal(r.status, 0, r.stderr);
      const lines = readFileSync(combined, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(lines.length, 2 * 3 + 2);
      assert.deepEqual([...new Set(lines.map((l) => l.rendition))], ['low', 'high']);
      r = cli(['-r', REF, '-d', low, '-d', high, '--backend', 'cpu', '--ndjson', '-o', join(dir, '{name}.ndjson'), '--frame_cnt', '3', '-q']);
      assert.equal(r.status, 0, r.stderr);
      const own = readFileSync(join(dir, 'high.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(own.length, 4);
      assert.ok(own.every((l) => !('rendition' in l)));
    });

    it('usage errors exit 2: duplicate names, several logs without {name}, bad -d keys, --scale with --no-scale', function () {
      const cases = [
        [['-r', REF, '-d', low, '-d', low], /both named "low"/],
        [['-r', REF, '-d', `name=x:path=${low}`, '-d', `name=x:path=${high}`], /names must be unique/],
        [['-r', REF, '-d', low, '-d', high, '--json', '-o', join(tmp, 'one.json')], /\{name\}/],
        [['-r', REF, '-d', low, '-d', high, '-o', '-'], /\{name\}/],
        [['-r', REF, '-d', `name=x:bogus=1:path=${low}`], /unknown key "bogus"/],
        [['-r', REF, '-d', 'name=x'], /missing path=/],
        [['-r', REF, '-d', low, '-d', high, '--scale', '--no-scale'], /--scale or --no-scale/],
      ];
      for (const [args, message] of cases) {
        const r = cli([...args, '--backend', 'cpu']);
        assert.equal(r.status, 2, `${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
        assert.match(r.stderr, message);
      }
    });

    it('--no-scale: a rendition of another size is an error (exit 1)', function () {
      const r = cli(['-r', REF, '-d', low, '-d', small, '--no-scale', '--backend', 'cpu', '-q']);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /80x46 does not match the reference/);
    });

    it('parses -d: a plain path, or name=, skip= and path= (last, colons and all)', function () {
      assert.deepEqual(parseDistorted('out/720p.mp4'), { path: 'out/720p.mp4' });
      assert.deepEqual(parseDistorted('http://host:8080/live/720p.m3u8'), { path: 'http://host:8080/live/720p.m3u8' });
      assert.deepEqual(parseDistorted('name=720p:path=srt://host:9000?mode=caller'), { name: '720p', path: 'srt://host:9000?mode=caller' });
      assert.deepEqual(parseDistorted('skip=2:name=a:path=a.y4m'), { name: 'a', frameSkip: 2, path: 'a.y4m' });
      assert.deepEqual(parseDistorted('path=name=odd.mp4'), { path: 'name=odd.mp4' });
    });
  });

  describe('groupFrames', function () {
    /** n synthetic frames whose luma[0] is the index. */
    function fake(label, n) {
      const fmt = { width: 32, height: 32, bitDepth: 8, chroma: '420' };
      const s = { label, out: 0, format: async () => fmt, close: async () => {} };
      s[Symbol.asyncIterator] = () => {
        let i = 0;
        return {
          next: async () => {
            if (i >= n) return { done: true, value: undefined };
            s.out++;
            const luma = new Uint8Array(32 * 32);
            luma[0] = i;
            let released = false;
            return { done: false, value: { index: i++, format: fmt, luma, release: () => { if (!released) s.out--; released = true; } } };
          },
          return: async () => ({ done: true, value: undefined }),
        };
      };
      return s;
    }

    it('groups each reference frame with every rendition; a shorter rendition ends alone, with a warning', async function () {
      const ref = fake('ref', 6);
      const a = fake('a', 6);
      const b = fake('b', 3);
      const c = fake('c', 9);
      const warnings = [];
      const rows = [];
      for await (const g of groupFrames(ref, [a, b, c], { onWarning: (m) => warnings.push(m), frameSkipDist: [0, 0, 1] })) {
        rows.push([g.index, g.ref.luma[0], ...g.dis.map((f) => (f ? f.luma[0] : '-'))]);
        g.ref.release();
        for (const f of g.dis) f?.release();
      }
      assert.deepEqual(rows, [
        [0, 0, 0, 0, 1],
        [1, 1, 1, 1, 2],
        [2, 2, 2, 2, 3],
        [3, 3, 3, '-', 4],
        [4, 4, 4, '-', 5],
        [5, 5, 5, '-', 6],
      ]);
      assert.deepEqual(warnings.sort(), [
        'b ended before ref: b has 3 frames, ref has 6; scored the first 3 frames of each',
        'ref ended before c: ref has 6 frames, c has 9 (1 skipped); scored the first 6 frames of each',
      ]);
      for (const s of [ref, a, b, c]) assert.equal(s.out, 0, `${s.label}: frames never released`);
    });

    it('stops when the last rendition ends, counting the rest of the reference', async function () {
      const ref = fake('ref', 10);
      const warnings = [];
      let n = 0;
      for await (const g of groupFrames(ref, [fake('a', 4), fake('b', 2)], { onWarning: (m) => warnings.push(m) })) {
        n++;
        g.ref.release();
        for (const f of g.dis) f?.release();
      }
      assert.equal(n, 4);
      assert.deepEqual(warnings, [
        'b ended before ref: b has 2 frames, ref has 10; scored the first 2 frames of each',
        'a ended before ref: a has 4 frames, ref has 10; scored the first 4 frames of each',
      ]);
      assert.equal(ref.out, 0);
    });
  });
});
