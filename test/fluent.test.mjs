// fluent-ffmpeg commands as inputs: a real transcode through fluent-ffmpeg and the bundled
// ffmpeg, scored as it encodes; its scores must equal those of the finished encode scored
// afterwards, bit for bit; the output still lands where the command sends it; a bad codec
// fails the run with ffmpeg's own message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import installer from '@ffmpeg-installer/ffmpeg';
import ffmpeg from 'fluent-ffmpeg';
import { lastValueFrom, toArray, take } from 'rxjs';

import { score, scoreIterator, scoreLadder, transcodeInput, VmafError } from '../dist/index.js';

const SOURCE = fileURLToPath(new URL('../examples/media/ref.y4m', import.meta.url));
const options = { backend: 'cpu', threads: 2 };

const collect = (observable) => lastValueFrom(observable.pipe(toArray()));
const command = (input = SOURCE) => ffmpeg(input).setFfmpegPath(installer.path);
const values = (frames) => frames.map((f) => ({ index: f.index, features: f.features, scores: f.scores }));
const tempDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith('vmaf-stream-tee-')).sort();

describe('fluent-ffmpeg commands as inputs', function () {
  this.timeout(60000);
  let tmp;
  let before0;
  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'vmaf-fluent-'));
    before0 = tempDirs();
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('score(source, command) with a file output: the encode scored live equals the finished file scored after', async () => {
    const out = join(tmp, 'x264.mp4');
    const cmd = command().videoCodec('libx264').outputOptions('-crf', '38', '-movflags', '+faststart').output(out);
    let ended = false;
    cmd.on('end', () => (ended = true));
    const live = await collect(score(SOURCE, cmd, options));
    assert.equal(live.length, 12);
    assert.ok(ended, 'the run completes once the transcode has');
    // The output is the user's: an mp4 of H.264, moov first (faststart went to the mp4 slave).
    const head = readFileSync(out).subarray(0, 64).toString('latin1');
    assert.ok(head.indexOf('moov') > 0 && head.indexOf('moov') < 64, 'moov atom before the media (faststart)');
    const after = await collect(score(SOURCE, out, options));
    assert.deepEqual(values(live), values(after));
    assert.ok(live.every((f) => f.scores.vmaf < 99), 'an encode at crf 38 is not lossless: the encoded frames are what was scored');
  });

  it('a stream output: the user gets every byte, and the scores equal the written file scored after', async () => {
    const out = join(tmp, 'x264.ts');
    const destination = createWriteStream(out);
    const finished = new Promise((resolve) => destination.on('finish', resolve));
    const cmd = command().videoCodec('libx264').outputOptions('-crf', '30').format('mpegts').output(destination);
    const live = [];
    for await (const frame of scoreIterator(SOURCE, cmd, options)) live.push(frame);
    await finished;
    assert.equal(live.length, 12);
    assert.deepEqual(values(live), values(await collect(score(SOURCE, out, options))));
  });

  it('several outputs: the named one is scored, the others are written too', async () => {
    const low = join(tmp, 'low.mkv');
    const high = join(tmp, 'high.mkv');
    const cmd = command()
      .output(high).videoCodec('libx264').outputOptions('-crf', '18')
      .output(low).videoCodec('libx264').outputOptions('-crf', '45');
    assert.throws(() => transcodeInput(cmd), /has 2 outputs: name the one to score/);
    const live = await collect(score(SOURCE, transcodeInput(cmd, { output: low }), options));
    assert.ok(statSync(high).size > 0 && statSync(low).size > 0);
    assert.deepEqual(values(live), values(await collect(score(SOURCE, low, options))));
    const highScores = await collect(score(SOURCE, high, options));
    assert.ok(highScores[0].scores.vmaf > live[0].scores.vmaf, 'the low rung was scored, not the high one');
  });

  it('a ladder of commands: renditions named after their outputs, scaled to the source', async () => {
    const rungs = ['full.mp4', 'half.mp4'].map((name) => join(tmp, name));
    const full = command().videoCodec('libx264').outputOptions('-crf', '25').output(rungs[0]);
    const half = command().videoCodec('libx264').size('80x46').outputOptions('-crf', '25').output(rungs[1]);
    const results = await collect(scoreLadder(SOURCE, [full, half], options));
    const names = [...new Set(results.map((r) => r.rendition))].sort();
    assert.deepEqual(names, ['full', 'half']);
    for (const name of names) assert.equal(results.filter((r) => r.rendition === name).length, 12);
    const fullAfter = await collect(score(SOURCE, rungs[0], options));
    assert.deepEqual(values(results.filter((r) => r.rendition === 'full').map((r) => r.result)), values(fullAfter));
  });

  it('a bad codec fails the run with E_FFMPEG and ffmpeg\'s message', async () => {
    const cmd = command().outputOptions('-c:v', 'libnope').output(join(tmp, 'bad.mp4'));
    await assert.rejects(collect(score(SOURCE, cmd, options)), (err) => {
      assert.ok(err instanceof VmafError);
      assert.equal(err.code, 'E_FFMPEG');
      assert.match(err.message, /the transcode failed: .*Unknown encoder 'libnope'/s);
      return true;
    });
  });

  it('a missing input fails the run with E_FFMPEG and ffmpeg\'s message', async () => {
    const cmd = command(join(tmp, 'no-such-source.mp4')).videoCodec('libx264').output(join(tmp, 'none.mp4'));
    await assert.rejects(collect(score(SOURCE, cmd, options)), (err) => {
      assert.equal(err.code, 'E_FFMPEG');
      assert.match(err.message, /No such file or directory/);
      return true;
    });
  });

  it('unsubscribing early stops the transcode: its ffmpeg child is gone, nothing is left behind', async () => {
    // A longer source, so that the encode is still running when the run stops.
    const long = join(tmp, 'long.y4m');
    const made = spawnSync(installer.path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=160x90:r=25:d=20', '-f', 'yuv4mpegpipe', '-y', long]);
    assert.equal(made.status, 0, String(made.stderr));
    const cmd = command(long).videoCodec('libx264').outputOptions('-crf', '20').output(join(tmp, 'long.mp4'));
    let pid;
    cmd.on('start', () => (pid = cmd.ffmpegProc.pid));
    const outcome = new Promise((resolve) => {
      cmd.on('end', () => resolve('end'));
      cmd.on('error', (err) => resolve(err.message));
    });
    const first = await collect(score(long, cmd, options).pipe(take(3)));
    assert.equal(first.length, 3);
    assert.match(await outcome, /killed with signal SIGKILL/, 'the transcode was stopped, not left to finish');
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    assert.deepEqual(tempDirs(), before0, 'the socket folder is removed');
  });
});
