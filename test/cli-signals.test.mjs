// How a command-line run ends when it is stopped from outside: SIGINT and SIGTERM finish
// the log with the frames scored so far (exit 130 and 143), a reader that closes standard
// output ends the run quietly (exit 141, as SIGPIPE would), a log that cannot be written
// is an error (exit 1). In every case the ffmpeg children are gone when the process is.
//
// The inputs are live: named pipes, the reference a synthetic y4m (read natively) fed 25
// frames a second for two minutes, the distorted MPEG-2 in MPEG-TS written by an ffmpeg
// encoder (held back by the pipe: the reference sets the pace), which vmaf-stream decodes
// with an ffmpeg child of its own. A run that did not stop would outlast the test's timeout.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { resolveFfmpegPath } from '../dist/decode/ffmpeg-path.js';
import { childrenOf, commandLine, running } from './helpers/processes.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const WRITER = fileURLToPath(new URL('./helpers/fifo-writer.mjs', import.meta.url));
/** Frames each live input offers; at 25 a second, far longer than any test here waits. */
const LIVE_FRAMES = 3000;

/** Frames in a log written so far (a streamed log grows frame by frame). */
function framesIn(format, text) {
  switch (format) {
    case 'json':
    case 'ndjson':
      return text.split('"frameNum"').length - 1;
    case 'xml':
      return text.split('<frame frameNum=').length - 1;
    case 'csv':
      return Math.max(0, text.split('\n').filter((l) => /^\d+,/.test(l)).length);
  }
  throw new Error(format);
}

/** A small well-formedness check: tags nest and close, only whitespace between them. */
function assertWellFormedXml(text) {
  const stack = [];
  let at = 0;
  for (const m of text.matchAll(/<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w.-]+="[^"<]*")*)\s*(\/?)>/g)) {
    assert.match(text.slice(at, m.index), /^\s*$/, `text between tags at ${at}`);
    at = m.index + m[0].length;
    const [, closing, name, , selfClosing] = m;
    if (closing) assert.equal(stack.pop(), name, `</${name}> closes what it should`);
    else if (!selfClosing) stack.push(name);
  }
  assert.match(text.slice(at), /^\s*$/, 'nothing after the root element');
  assert.deepEqual(stack, [], 'every element closed');
}

/** The log's frame numbers, after checking that it is complete in its format. */
function parseLog(format, text) {
  switch (format) {
    case 'json': {
      const log = JSON.parse(text);
      assert.ok(log.pooled_metrics.vmaf, 'pooled vmaf');
      return log.frames.map((f) => f.frameNum);
    }
    case 'xml': {
      assertWellFormedXml(text);
      assert.match(text, /<pooled_metrics>[\s\S]*<metric name="vmaf" /);
      return [...text.matchAll(/<frame frameNum="(\d+)"/g)].map((m) => Number(m[1]));
    }
    case 'csv': {
      const [header, ...rows] = text.trimEnd().split('\n');
      const columns = header.split(',').length;
      assert.ok(header.startsWith('Frame,') && header.includes('vmaf'), header);
      for (const row of rows) assert.equal(row.split(',').length, columns, row);
      return rows.map((row) => Number(row.split(',')[0]));
    }
  }
  throw new Error(format);
}

describe('cli: stopped from outside', function () {
  this.timeout(90000);
  let ffmpeg;
  let dir;
  let feeders = [];

  before(async () => {
    ffmpeg = await resolveFfmpegPath();
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vmaf-cli-signals-'));
  });

  afterEach(() => {
    for (const feeder of feeders) feeder.kill('SIGKILL');
    feeders = [];
    rmSync(dir, { recursive: true, force: true });
  });

  /** Two named pipes fed in real time, as described at the top. */
  function liveInputs() {
    const ref = join(dir, 'ref.fifo');
    const dis = join(dir, 'dis.fifo');
    for (const fifo of [ref, dis]) assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    feeders.push(spawn(process.execPath, [WRITER, ref, 'synth', '160x90', String(LIVE_FRAMES), '40'], { stdio: 'ignore' }));
    feeders.push(spawn(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25',
      '-frames:v', String(LIVE_FRAMES), '-c:v', 'mpeg2video', '-f', 'mpegts', '-y', dis], { stdio: 'ignore' }));
    return { ref, dis };
  }

  /** Starts the CLI; `exited` resolves with its exit code and signal. */
  function start(args, stdout = 'ignore') {
    const cli = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', stdout, 'pipe'] });
    let stderr = '';
    cli.stderr.setEncoding('utf8');
    cli.stderr.on('data', (text) => (stderr += text));
    const exited = new Promise((resolve) => cli.on('exit', (code, signal) => resolve({ code, signal, stderr })));
    return { cli, exited, stderr: () => stderr };
  }

  /** The CLI's ffmpeg children right now: at least the distorted input's decoder. */
  function ffmpegChildren(cli) {
    const children = childrenOf(cli.pid);
    assert.ok(children.some((pid) => commandLine(pid).includes('ffmpeg')), `an ffmpeg child: ${children.map(commandLine).join('; ')}`);
    return children;
  }

  function assertGone(children) {
    for (const pid of children) assert.ok(!running(pid), `child ${pid} (${commandLine(pid)}) still runs after vmaf-stream exited`);
  }

  async function waitForFrames(format, log, count, run) {
    while (!(existsSync(log) && framesIn(format, readFileSync(log, 'utf8')) >= count)) {
      const ended = await Promise.race([run.exited, sleep(50).then(() => undefined)]);
      assert.equal(ended, undefined, `vmaf-stream ended before ${count} frames were scored: ${run.stderr()}`);
    }
  }

  const cases = [
    ['SIGINT', 130, 'json'],
    ['SIGTERM', 143, 'json'],
    ['SIGTERM', 143, 'xml'],
    ['SIGINT', 130, 'csv'],
  ];
  for (const [signal, status, format] of cases) {
    it(`${signal}: a complete ${format} log with the frames scored so far, ffmpeg stopped, exit ${status}`, async () => {
      const { ref, dis } = liveInputs();
      const log = join(dir, `out.${format}`);
      const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', '--threads', '2', `--${format}`, '-o', log]);
      await waitForFrames(format, log, 10, run);
      const children = ffmpegChildren(run.cli);
      run.cli.kill(signal);
      const { code, stderr } = await run.exited;
      assert.equal(code, status, stderr);
      assertGone(children);
      const said = new RegExp(`^vmaf-stream: interrupted by ${signal} after (\\d+) frames$`, 'm').exec(stderr);
      assert.ok(said, stderr);
      const scored = Number(said[1]);
      assert.ok(scored >= 10 && scored < LIVE_FRAMES, `${scored} frames`);
      const frames = parseLog(format, readFileSync(log, 'utf8'));
      assert.deepEqual(frames, Array.from({ length: scored }, (_, i) => i));
      // The pooled score follows, on a line of its own; no other message (the inputs were
      // cut short by the stop, which is not worth a warning).
      assert.match(stderr, /^vmaf: \d+\.\d{6}\n$/m);
      assert.equal(stderr.split('\n').filter((l) => l !== '' && !/^vmaf(-stream)?: /.test(l)).length, 0, stderr);
      assert.doesNotMatch(stderr, /warning/);
    });
  }

  it('Ctrl-C at a terminal (SIGINT to the whole process group, ffmpeg included): the same, exit 130', async () => {
    const { ref, dis } = liveInputs();
    const log = join(dir, 'out.json');
    const cli = spawn(process.execPath, [BIN, '-r', ref, '-d', dis, '--backend', 'cpu', '--json', '-o', log, '-q'], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    cli.stderr.setEncoding('utf8');
    cli.stderr.on('data', (text) => (stderr += text));
    const exited = new Promise((resolve) => cli.on('exit', (code) => resolve(code)));
    await waitForFrames('json', log, 10, { exited, stderr: () => stderr });
    const children = ffmpegChildren(cli);
    process.kill(-cli.pid, 'SIGINT');
    assert.equal(await exited, 130, stderr);
    assertGone(children);
    const scored = Number(/interrupted by SIGINT after (\d+) frames/.exec(stderr)?.[1]);
    assert.equal(JSON.parse(readFileSync(log, 'utf8')).frames.length, scored);
    assert.ok(scored >= 10, stderr);
  });

  for (const format of ['ndjson', 'json']) {
    it(`standard output closed by its reader (--${format} -o - | head): quiet, prompt, ffmpeg stopped, exit 141`, async () => {
      const { ref, dis } = liveInputs();
      const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', `--${format}`, '-o', '-'], 'pipe');
      // Read as `head -1` would: up to the first frame, then close the pipe.
      let text = '';
      run.cli.stdout.setEncoding('utf8');
      await new Promise((resolve) => {
        const onData = (chunk) => {
          text += chunk;
          if (framesIn(format, text) >= 1) {
            run.cli.stdout.off('data', onData);
            resolve();
          }
        };
        run.cli.stdout.on('data', onData);
      });
      const children = ffmpegChildren(run.cli);
      run.cli.stdout.destroy();
      const { code, stderr } = await run.exited;
      assert.equal(code, 141, stderr);
      assert.equal(stderr, '');
      assertGone(children);
    });
  }

  it('a log that cannot be written (-o /dev/full): a clear error, ffmpeg stopped, exit 1', async function () {
    if (!existsSync('/dev/full')) this.skip();
    const { ref, dis } = liveInputs();
    const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', '--json', '-o', '/dev/full']);
    // The first frame's write fails; the children are sampled while they can be.
    const children = new Map();
    for (;;) {
      for (const pid of childrenOf(run.cli.pid)) if (!children.has(pid)) children.set(pid, commandLine(pid));
      if (await Promise.race([run.exited, sleep(20).then(() => undefined)])) break;
    }
    const { code, stderr } = await run.exited;
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^vmaf-stream: \/dev\/full: cannot write the log: ENOSPC/m);
    // The write can fail before the sampler sees the ffmpeg child start (the signal tests
    // above prove it is stopped); whatever was seen must be gone.
    assertGone([...children.keys()]);
  });
});
