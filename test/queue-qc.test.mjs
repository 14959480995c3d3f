// Live QC on a queue (issue 11): --window, --alert, --align and the drift monitor on a title
// scored by worker processes over a real Redis (Debian's redis-server, started here) give the
// NDJSON log of the single run of the same command, byte for byte (its summary's fps, the
// run's own speed, aside): the same window, alert, alignment and drift lines in the same
// places. The offset search runs once in the submitting process, before the title is cut;
// the drift monitor's searches read pairs the submitting process decodes just for them,
// before the frames they belong to go on. A search runs at the score of the frame past the
// pairs it reads (in frame terms, not however far decoding had run ahead), so its line lands
// after the same frame in both runs, whatever --threads.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goldenClip } from './helpers/golden.mjs';
import { haveRedis, startRedis } from './helpers/redis.mjs';
import { range, readY4m, writeY4m } from './helpers/y4m.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const src01 = goldenClip('src01_160x90_8bit');
const ladder = goldenClip('ladder_320x180_300f');

function cli(args) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 300000 });
}

function startWorker(url) {
  const child = spawn(process.execPath, [BIN, 'worker', '--queue', url, '--threads', '1', '--lock-ms', '10000', '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr.setEncoding('utf8');
  const ready = new Promise((resolve, reject) => {
    child.stderr.on('data', (t) => {
      text += t;
      if (/ready/.test(text)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${text}`)));
  });
  child.done = new Promise((resolve) => child.once('exit', resolve));
  return ready.then(() => child);
}

const maskFps = (text) => text.replace(/"fps":[0-9.]+/g, '"fps":X');
/** The frame line just before the first line containing `needle`. */
const lineAfter = (text, needle) => {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.includes(needle));
  const frame = lines.slice(0, at).reverse().find((l) => l.includes('"frameNum"'));
  return frame === undefined ? undefined : { frameNum: JSON.parse(frame).frameNum };
};
const typed = (text, type) => text.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.type === type);

(haveRedis() ? describe : describe.skip)('queue: live QC (windows, alerts, alignment, drift) as the single run', function () {
  let redis;
  let workers = [];
  let tmp;
  let dropped;
  let late3;
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'vmaf-queue-qc-'));
    const dis = readY4m(src01.dis);
    // Frame 20 dropped: from pair 20 on, distorted frame i shows reference frame i + 1.
    dropped = writeY4m(join(tmp, 'dropped.y4m'), dis, [...range(0, 20), ...range(21, 48)]);
    // Distorted frame i shows reference frame i + 3.
    late3 = writeY4m(join(tmp, 'late3.y4m'), dis, range(3, 48));
    redis = await startRedis();
    workers = await Promise.all([startWorker(redis.url), startWorker(redis.url), startWorker(redis.url)]);
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null) w.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.done));
    await redis?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** The single run's NDJSON and stderr, and the queued run's, for the same arguments. */
  function both(args, segment) {
    const single = cli([...args, '--ndjson', '-o', '-', '--backend', 'cpu']);
    assert.equal(single.status, 0, single.stderr);
    const queued = cli([...args, '--ndjson', '-o', '-', '--queue', redis.url, '--segment', String(segment)]);
    assert.equal(queued.status, 0, queued.stderr);
    return { single, queued };
  }

  for (const threads of [1, 2, 8]) {
    it(`a dropped frame with windows and alerts, --threads ${threads}: the same NDJSON, the drift line where the single run puts it`, () => {
      const args = ['-r', src01.ref, '-d', dropped, '--precision', '17', '-q', '--threads', String(threads), '--drift', '--window', '10f', '--window-hop', '3f', '--alert', 'vmaf<90', '--alert', 'mean(vmaf)<88 over 5f'];
      for (const segment of threads === 2 ? [1, 60] : [7]) {
        const { single, queued } = both(args, segment);
        assert.equal(maskFps(queued.stdout), maskFps(single.stdout), `segment ${segment}`);
        const drift = typed(queued.stdout, 'drift');
        // In frame terms, whatever the read-ahead: right after the frame past the pairs its
        // search reads (the drop at 20, found from 20: pairs up to 20 + 8 − 1 + 2).
        assert.deepEqual(lineAfter(single.stdout, '"type":"drift"'), { frameNum: 29 });
        assert.deepEqual(drift.map((d) => [d.kind, d.atIndex, d.offset, d.analysed]), [['dropped', 20, 1, true]]);
        assert.ok(typed(queued.stdout, 'window').length > 10);
        assert.deepEqual(typed(queued.stdout, 'alert').map((a) => [a.spec, a.state, a.index]), typed(single.stdout, 'alert').map((a) => [a.spec, a.state, a.index]));
        assert.ok(typed(queued.stdout, 'alert').length >= 2);
        // The alert and the drift report on stderr too, as the single run says them.
        assert.match(queued.stderr, /^vmaf-stream: alert: vmaf<90: started at frame 20/m);
        assert.match(queued.stderr, /^vmaf-stream: the distorted stream dropped a frame at frame 20/m);
      }
    });
  }

  it('a ladder with --align auto: the offset searched once before the title is cut, each rendition its own; the same NDJSON', () => {
    const args = ['-r', src01.ref, '-d', `name=late:path=${late3}`, '-d', `name=dropped:path=${dropped}`, '--align', 'auto', '--align-range', '4', '--precision', '17', '-q', '--threads', '2', '--window', '8f', '--alert', 'dropped:vmaf<80'];
    const { single, queued } = both(args, 5);
    assert.equal(maskFps(queued.stdout), maskFps(single.stdout));
    const alignment = typed(queued.stdout, 'alignment');
    assert.deepEqual(alignment.map((a) => [a.rendition, a.mode, a.offset, a.frameSkipRef, a.frameSkipDist]), [['late', 'auto', 3, 3, 0], ['dropped', 'auto', 0, 3, 3]]);
    // Alignment lines first, before any frame.
    assert.equal(JSON.parse(queued.stdout.split('\n')[0]).type, 'alignment');
    assert.deepEqual(typed(queued.stdout, 'drift').map((d) => [d.rendition, d.kind, d.atIndex]), [['dropped', 'dropped', 17]]);
    const line = (text) => text.split('\n').find((l) => l.includes('late: aligned at'));
    assert.equal(line(queued.stderr), line(single.stderr));
  });

  it('--align N: every segment uses the offset; the frames those of --frame_skip_ref N', () => {
    const aligned = cli(['-r', src01.ref, '-d', late3, '--align', '3', '--precision', '17', '-q', '--ndjson', '-o', '-', '--queue', redis.url, '--segment', '7']);
    assert.equal(aligned.status, 0, aligned.stderr);
    const skipped = cli(['-r', src01.ref, '-d', late3, '--frame_skip_ref', '3', '--precision', '17', '-q', '--ndjson', '-o', '-', '--backend', 'cpu']);
    assert.equal(skipped.status, 0, skipped.stderr);
    const frames = (text) => text.trim().split('\n').filter((l) => l.includes('"frameNum"'));
    assert.deepEqual(frames(aligned.stdout), frames(skipped.stdout));
    assert.equal(frames(aligned.stdout).length, 45);
    assert.deepEqual(typed(aligned.stdout, 'alignment').map((a) => [a.mode, a.offset, a.frameSkipRef]), [['fixed', 3, 3]]);
  });

  it('300 frames of H.264 cut at keyframes, windows in seconds, an alert for a span: the same NDJSON, its drift line included', () => {
    const args = ['-r', ladder.ref, '-d', ladder.dis, '-q', '--threads', '2', '--drift', '--window', '1s', '--alert', 'vmaf<70 for 5f', '--subsample', '2'];
    const { single, queued } = both(args, 60);
    assert.equal(maskFps(queued.stdout), maskFps(single.stdout));
    assert.ok(typed(single.stdout, 'drift').length > 0, 'the clip\'s scene cuts make the monitor search');
    assert.ok(typed(single.stdout, 'window').length > 5);
  });

  it('no model (--no_prediction): the frames and windows as the single run; no drift monitor on a queue (it would read every frame)', () => {
    const args = ['-r', src01.ref, '-d', dropped, '--no_prediction', '--feature', 'psnr', '--precision', '17', '-q', '--threads', '2', '--drift', '--window', '10f', '--window-metrics', 'psnr_y'];
    const { single, queued } = both(args, 7);
    assert.equal(typed(single.stdout, 'drift').length, 1, 'the single run\'s monitor scores luma PSNR of every pair');
    assert.equal(typed(queued.stdout, 'drift').length, 0);
    const withoutDrift = (text) => maskFps(text).split('\n').filter((l) => !l.includes('"type":"drift"')).join('\n');
    assert.equal(withoutDrift(queued.stdout), withoutDrift(single.stdout));
  });

  it('a window metric the results lack: a usage error (exit 2), as in the single run', () => {
    const args = ['-r', src01.ref, '-d', src01.dis, '-q', '--window', '10f', '--window-metrics', 'no_such_metric', '--ndjson', '-o', '-'];
    const single = cli([...args, '--backend', 'cpu']);
    const queued = cli([...args, '--queue', redis.url, '--segment', '7']);
    assert.equal(single.status, 2);
    assert.equal(queued.status, 2, queued.stderr);
    const message = (r) => r.stderr.split('\n').find((l) => l.includes('no_such_metric'));
    assert.ok(message(single));
    assert.equal(message(queued), message(single));
  });
});
