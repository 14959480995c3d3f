// Scoring on a queue (issue 11), as users run it: a real Redis (Debian's redis-server), worker
// processes started with the CLI, the submitting command as a child process. A queued run must
// write, byte for byte, the log the single run writes; the NDJSON summary line's fps (the
// run's own speed) is the one field that differs between any two runs, queued or not.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync, openSync, writeSync, closeSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { haveRedis, startRedis } from './helpers/redis.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-queue-'));
// The carried golden clips this file reads (one place, for when fixtures move), and an
// FFV1 reference with a keyframe every 12 frames against an H.264 distorted input with one
// keyframe, encoded once from the carried src01 clip (48 frames at 25 fps).
const pairOf = ({ ref, dis }) => ({ ref, dis });
let h264;
const clips = {
  src01: pairOf(goldenClip('src01_160x90_8bit')),
  ladder: pairOf(goldenClip('ladder_320x180_300f')),
  get h264() {
    return (h264 ??= encodeKeyframePair(clips.src01));
  },
};

function encodeKeyframePair({ ref, dis }) {
  const ffmpeg = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
  const encode = (input, output, codec) => {
    const r = spawnSync(ffmpeg, ['-v', 'error', '-nostdin', '-y', '-i', input, ...codec, output], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return output;
  };
  return {
    ref: encode(ref, join(tmp, 'h264-ref.mkv'), ['-c:v', 'ffv1', '-g', '12']),
    dis: encode(dis, join(tmp, 'h264-dis.mp4'), ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '30', '-g', '1000', '-x264-params', 'scenecut=0']),
  };
}
// Open GOPs in MPEG-TS (x264 open-gop, temporal direct, natural content): a seek to a keyframe's
// pts lands after its packet here, and a decoder started at an open-GOP I frame can decode
// later B frames differently; the workers must still give the single run's frames.
let openGop;
function encodeOpenGop() {
  const ffmpeg = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
  const encode = (output, codec) => {
    const r = spawnSync(ffmpeg, ['-v', 'error', '-nostdin', '-y', '-i', clips.ladder.ref, '-frames:v', '120', ...codec, output], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return output;
  };
  return (openGop ??= {
    ref: encode(join(tmp, 'open-ref.ts'), ['-c:v', 'libx264', '-preset', 'medium', '-g', '24', '-x264-params', 'scenecut=0:open-gop=1:bf=3:direct=temporal:ref=5']),
    dis: encode(join(tmp, 'open-dis.mp4'), ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '38', '-g', '1000', '-x264-params', 'scenecut=0']),
  });
}
let counter = 0;
const out = (ext) => join(tmp, `log-${++counter}.${ext}`);

function cli(args) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300000 });
}

/** A child process of the CLI whose stderr can be awaited line by line. */
function start(args, env = process.env) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  child.stderrText = '';
  const waiters = [];
  child.stderr.setEncoding('utf8').on('data', (t) => {
    child.stderrText += t;
    for (const w of [...waiters]) if (w.pattern.test(child.stderrText)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  child.stdout.resume();
  child.waitFor = (pattern) =>
    new Promise((resolve, reject) => {
      if (pattern.test(child.stderrText)) return resolve();
      waiters.push({ pattern, resolve });
      child.once('exit', (code) => reject(new Error(`exited (${code}) before ${pattern}: ${child.stderrText}`)));
    });
  child.done = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stderr: child.stderrText })));
  return child;
}

/**
 * A worker of the CLI. Its lock: 1 s where a test needs a dead worker's segment handed on
 * quickly (reliability), else 10 s, so that a worker starved of CPU on a loaded machine (its
 * lock renewals late) does not lose segments it is still scoring.
 */
async function startWorker(url, extra = [], lockMs = 10000) {
  const worker = start(['worker', '--queue', url, '--threads', '2', '--lock-ms', String(lockMs), ...extra]);
  await worker.waitFor(/ready/);
  return worker;
}

async function stopAll(children) {
  await Promise.all(children.map(async (c) => {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGTERM');
      await c.done;
    }
  }));
}

/**
 * A Redis of the test's own (startRedis options) and the children it starts, all stopped at
 * the end; `redis.current` is the server now (a test may restart it).
 */
async function withRedis(options, body) {
  const redis = { current: await startRedis(options) };
  const children = [];
  try {
    return await body(redis, children);
  } finally {
    await stopAll(children);
    await redis.current.stop();
  }
}

const maskFps = (text) => text.replace(/"fps":[0-9.]+,"frameCount"/g, '"fps":X,"frameCount"');

/** The single run's log and the queued run's, for the same arguments. */
function bothLogs(args, format, url, segment) {
  const single = out(format);
  const queued = out(format);
  const a = cli([...args, `--${format}`, '-o', single, '-q', '--backend', 'cpu']);
  assert.equal(a.status, 0, a.stderr);
  const b = cli([...args, `--${format}`, '-o', queued, '-q', '--queue', url, '--segment', String(segment)]);
  assert.equal(b.status, 0, b.stderr);
  return [readFileSync(single, 'utf8'), readFileSync(queued, 'utf8')];
}

(haveRedis() ? describe : describe.skip)('queue: segments on BullMQ workers over Redis', function () {
  describe('merged logs equal the single run', function () {
    let redis;
    let workers = [];
    before(async () => {
      redis = await startRedis();
      workers = [await startWorker(redis.url), await startWorker(redis.url), await startWorker(redis.url)];
    });
    after(async () => {
      await stopAll(workers);
      await redis?.stop();
    });

    for (const segment of [1, 7, 60]) {
      it(`48 frames of y4m in segments of ${segment}: the same JSON log`, () => {
        const [single, queued] = bothLogs(['-r', clips.src01.ref, '-d', clips.src01.dis], 'json', redis.url, segment);
        assert.equal(queued, single);
      });
    }

    it('skips, --frame_cnt, --subsample and a second model: the same XML log', () => {
      const args = ['-r', clips.src01.ref, '-d', clips.src01.dis, '--frame_skip_ref', '2', '--frame_cnt', '30', '--subsample', '3', '-m', 'version=vmaf_v0.6.1:name=vmaf', '-m', 'version=vmaf_v0.6.1neg:name=vmaf_neg'];
      const [single, queued] = bothLogs(args, 'xml', redis.url, 7);
      assert.equal(queued, single);
    });

    it('a distorted skip, CSV and SUB logs and --precision 17', () => {
      for (const format of ['csv', 'sub']) {
        const [single, queued] = bothLogs(['-r', clips.src01.ref, '-d', clips.src01.dis, '--frame_skip_dist', '3', '--precision', '17'], format, redis.url, 7);
        assert.equal(queued, single);
      }
    });

    for (const segment of [1, 7, 60]) {
      // The NDJSON of this clip, its drift line included, is checked in queue-qc.test.mjs.
      it(`300 frames of H.264 (keyframes every 100), --segment ${segment}: cut at keyframes, the same JSON log`, () => {
        const [single, queued] = bothLogs(['-r', clips.ladder.ref, '-d', clips.ladder.dis, '--subsample', segment === 7 ? '2' : '1'], 'json', redis.url, segment);
        assert.equal(queued, single);
      });
    }

    it('an H.264 distorted input with one keyframe against an FFV1 reference cut every 12 frames: the same NDJSON (pts included)', () => {
      const [single, queued] = bothLogs(['-r', clips.h264.ref, '-d', clips.h264.dis], 'ndjson', redis.url, 7);
      assert.equal(maskFps(queued), maskFps(single));
      assert.match(queued, /"refPts":0\.52,"disPts":0\.52/);
    });

    it('H.264 open GOPs in MPEG-TS, cut at every keyframe (24 frames): the JSON log of one decoder, byte for byte', () => {
      const { ref, dis } = encodeOpenGop();
      const single = out('json');
      const queued = out('json');
      const a = cli(['-r', ref, '-d', dis, '--json', '-o', single, '-q', '--backend', 'cpu', '--decoders', '1']);
      assert.equal(a.status, 0, a.stderr);
      const b = cli(['-r', ref, '-d', dis, '--json', '-o', queued, '-q', '--queue', redis.url, '--segment', '7']);
      assert.equal(b.status, 0, b.stderr);
      const [one, merged] = [readFileSync(single, 'utf8'), readFileSync(queued, 'utf8')];
      assert.equal(JSON.parse(one).frames.length, 120);
      assert.equal(merged, one);
    });

    it('a ladder (one reference, two renditions): each rendition its single-run JSON log', () => {
      const pattern = join(tmp, 'ladder-{name}.json');
      const args = ['-r', clips.src01.ref, '-d', `name=a:path=${clips.src01.dis}`, '-d', `name=b:skip=2:path=${clips.src01.dis}`, '--json'];
      const a = cli([...args, '-o', pattern.replace('ladder-', 'single-'), '-q', '--backend', 'cpu']);
      assert.equal(a.status, 0, a.stderr);
      const b = cli([...args, '-o', pattern, '-q', '--queue', redis.url, '--segment', '5']);
      assert.equal(b.status, 0, b.stderr);
      for (const name of ['a', 'b']) {
        assert.equal(readFileSync(join(tmp, `ladder-${name}.json`), 'utf8'), readFileSync(join(tmp, `single-${name}.json`), 'utf8'), name);
      }
    });

    it('submit: a catalogue of two pairs and a ladder, each log the single run\'s', () => {
      const dir = mkdtempSync(join(tmp, 'catalogue-'));
      const titles = [
        { reference: clips.src01.ref, distorted: clips.src01.dis, output: join(dir, 'src01.json') },
        { reference: clips.h264.ref, distorted: clips.h264.dis, output: join(dir, 'h264.csv'), subsample: 2 },
        { reference: clips.src01.ref, distorted: [{ name: 'r1', path: clips.src01.dis }, { name: 'r2', path: clips.src01.dis, skip: 1 }], output: join(dir, 'ladder-{name}.xml') },
      ];
      const batch = join(dir, 'batch.json');
      writeFileSync(batch, JSON.stringify(titles));
      const r = cli(['submit', '--queue', redis.url, '--segment', '10', batch]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /3 of 3 titles scored/);
      const single = (args, file) => {
        const s = cli([...args, '-o', file, '-q', '--backend', 'cpu']);
        assert.equal(s.status, 0, s.stderr);
        return file.includes('{name}') ? undefined : readFileSync(file, 'utf8');
      };
      assert.equal(readFileSync(join(dir, 'src01.json'), 'utf8'), single(['-r', clips.src01.ref, '-d', clips.src01.dis, '--json'], out('json')));
      assert.equal(readFileSync(join(dir, 'h264.csv'), 'utf8'), single(['-r', clips.h264.ref, '-d', clips.h264.dis, '--csv', '--subsample', '2'], out('csv')));
      single(['-r', clips.src01.ref, '-d', `name=r1:path=${clips.src01.dis}`, '-d', `name=r2:skip=1:path=${clips.src01.dis}`, '--xml'], join(dir, 'single-{name}.xml'));
      for (const name of ['r1', 'r2']) assert.equal(readFileSync(join(dir, `ladder-${name}.xml`), 'utf8'), readFileSync(join(dir, `single-${name}.xml`), 'utf8'));
      // Merged titles leave nothing behind.
      const status = JSON.parse(cli(['status', '--queue', redis.url, '--json']).stdout);
      assert.equal(status.titles.length, 0);
      assert.equal(status.workers, 3);
    });

    it('a corrupt frame fails the title: exit 1, the input and the frame named', () => {
      const bad = join(tmp, 'corrupt.y4m');
      copyFileSync(clips.src01.dis, bad);
      // Frame 30's FRAME marker broken: the single run fails there too.
      const text = readFileSync(bad);
      const header = text.indexOf(0x0a) + 1;
      const stride = (text.length - header) / 48;
      const fd = openSync(bad, 'r+');
      writeSync(fd, Buffer.from('XRAME'), 0, 5, header + 30 * stride);
      closeSync(fd);
      const single = cli(['-r', clips.src01.ref, '-d', bad, '--json', '-o', out('json'), '-q', '--backend', 'cpu']);
      assert.equal(single.status, 1);
      const r = cli(['-r', clips.src01.ref, '-d', bad, '--json', '-o', out('json'), '-q', '--queue', redis.url, '--segment', '7']);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /corrupt\.y4m: frame 30: corrupt YUV4MPEG2 data/);
      const status = JSON.parse(cli(['status', '--queue', redis.url, '--json']).stdout);
      assert.equal(status.segments.waiting, 0, 'the other segments are cancelled');
    });
  });

  describe('a worker keeps its backend between segments', function () {
    // Carried clips only: these run wherever the repository does.
    const small = goldenClip('src01_160x90_8bit');
    const other = goldenClip('negated_256x144_2f');
    const count = (worker, pattern) => (worker.stderrText.match(pattern) ?? []).length;
    const opened = (worker) => count(worker, /backend opened/g);
    const reused = (worker) => count(worker, /backend reused/g);
    /** The worker's lines of `segments` segments (cli() blocks this process: its stderr is read afterwards). */
    const segmentsDone = async (worker, segments) => {
      while (count(worker, /: done in/g) < segments) await new Promise((r) => setTimeout(r, 20));
    };

    it('a gpu worker (lavapipe) scores five segments of a title: the single run\'s log, its device opened once', async function () {
      if (!backendsUnderTest().includes('gpu')) this.skip();
      const env = { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? mkdtempSync(join(tmpdir(), 'xdg-')) };
      await withRedis({}, async ({ current: redis }, children) => {
        const worker = start(['worker', '--queue', redis.url, '--backend', 'gpu', '--lock-ms', '60000'], env);
        children.push(worker);
        await worker.waitFor(/ready/);
        const args = ['-r', small.ref, '-d', small.dis, '--json', '-q'];
        const single = out('json');
        const s = spawnSync(process.execPath, [BIN, ...args, '-o', single, '--backend', 'gpu'], { encoding: 'utf8', env, timeout: 300000 });
        assert.equal(s.status, 0, s.stderr);
        const queued = out('json');
        const q = cli([...args, '-o', queued, '--queue', redis.url, '--segment', '10']);
        assert.equal(q.status, 0, q.stderr);
        assert.equal(readFileSync(queued, 'utf8'), readFileSync(single, 'utf8'));
        await segmentsDone(worker, 5);
        assert.equal(opened(worker), 1, worker.stderrText);
        assert.equal(reused(worker), 4, worker.stderrText);
        assert.match(worker.stderrText, /backend opened \(gpu, /);
      });
    });

    it('a cpu worker: one backend per frame size, the waiting one closed when the size changes; --backend-idle-ms 0: one per segment', () =>
      withRedis({}, async ({ current: redis }, children) => {
        const keeping = await startWorker(redis.url, ['--threads', '1']);
        children.push(keeping);
        // 48 frames by 16: three segments; 2 frames by 1: two (y4m: cut at any frame).
        const run = async (clip, segment, worker, done) => {
          const single = out('json');
          assert.equal(cli(['-r', clip.ref, '-d', clip.dis, '--json', '-o', single, '-q', '--backend', 'cpu']).status, 0);
          const queued = out('json');
          const r = cli(['-r', clip.ref, '-d', clip.dis, '--json', '-o', queued, '-q', '--queue', redis.url, '--segment', String(segment)]);
          assert.equal(r.status, 0, r.stderr);
          assert.equal(readFileSync(queued, 'utf8'), readFileSync(single, 'utf8'));
          await segmentsDone(worker, done);
        };
        await run(small, 16, keeping, 3);
        assert.deepEqual([opened(keeping), reused(keeping)], [1, 2], keeping.stderrText);
        await run(other, 1, keeping, 5);
        assert.deepEqual([opened(keeping), reused(keeping)], [2, 3], keeping.stderrText);
        assert.match(keeping.stderrText, /backend closed \(another plan or frame size\)/);
        await stopAll(children.splice(0));
        const fresh = await startWorker(redis.url, ['--threads', '1', '--backend-idle-ms', '0']);
        children.push(fresh);
        await run(small, 16, fresh, 3);
        assert.deepEqual([opened(fresh), reused(fresh)], [3, 0], fresh.stderrText);
      }));
  });

  describe('reliability', function () {
    /**
     * The ladder clip queued in segments of 100 on one worker (its Redis the test's own);
     * `disrupt` runs once that worker's stderr matches `when`, then a second worker joins:
     * the run must still write the single run's log.
     */
    async function disruptedRun(redis, children, when, disrupt) {
      const single = out('json');
      const args = ['-r', clips.ladder.ref, '-d', clips.ladder.dis, '--json'];
      assert.equal(cli([...args, '-o', single, '-q', '--backend', 'cpu']).status, 0);
      const worker = await startWorker(redis.current.url, ['--threads', '1'], 1000);
      children.push(worker);
      const queued = out('json');
      const run = start([...args, '-o', queued, '-q', '--queue', redis.current.url, '--segment', '100']);
      children.push(run);
      await worker.waitFor(when);
      await disrupt(worker);
      children.push(await startWorker(redis.current.url, [], 1000));
      const result = await run.done;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(readFileSync(queued, 'utf8'), readFileSync(single, 'utf8'));
    }

    it('a worker killed with SIGKILL mid-segment: its segment is retried elsewhere, the log is the same', () =>
      withRedis({}, (redis, children) =>
        disruptedRun(redis, children, /segment \d+ .*: started/, async (victim) => {
          victim.kill('SIGKILL');
          await victim.done;
          assert.doesNotMatch(victim.stderrText, /done in/, 'killed before finishing a segment');
        }),
      ));

    it('Redis restarted mid-run (with persistence): the run resumes, the log is the same', () =>
      withRedis({ persist: true }, (redis, children) =>
        disruptedRun(redis, children, /done in/, async () => {
          const first = redis.current;
          await first.stop();
          redis.current = await startRedis({ persist: true, port: first.port, dir: first.dir });
        }),
      ));

    it('Redis restarted without persistence: the run fails with a clear error, never a wrong log', () =>
      withRedis({}, async (redis, children) => {
        const run = start(['-r', clips.src01.ref, '-d', clips.src01.dis, '--json', '-o', out('json'), '-q', '--queue', redis.current.url, '--segment', '10']);
        children.push(run);
        // Enqueued (no worker yet): the status lists the title.
        for (;;) {
          const status = cli(['status', '--queue', redis.current.url, '--json']);
          if (status.status === 0 && JSON.parse(status.stdout).titles.length > 0) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        const first = redis.current;
        await first.stop();
        redis.current = await startRedis({ port: first.port });
        const result = await run.done;
        assert.equal(result.code, 1);
        assert.match(result.stderr, /lost segment \d+ .*Redis restarted without persistence/);
      }));

    it('--allow: a worker refuses inputs outside, with an error on the job that fails the run', () =>
      withRedis({}, async (redis, children) => {
        children.push(await startWorker(redis.current.url, ['--allow', tmp]));
        const r = start(['-r', clips.src01.ref, '-d', clips.src01.dis, '--json', '-o', out('json'), '-q', '--queue', redis.current.url]);
        children.push(r);
        const result = await r.done;
        assert.equal(result.code, 1);
        assert.match(result.stderr, /refuses .*ref\.y4m: outside the directories this worker may read \(--allow /);
      }));
  });
});
