// Faults of the parts around vmaf-stream, met for real: an ffmpeg child killed (SIGKILL) or
// stopped (SIGSTOP) in the middle of a live stream, a truncated compressed file, an input
// outside the allowed protocols, logs that cannot be written, a GPU device lost mid-run.
// Each ends with a clear error naming the input (and the frame, where one is involved), a
// non-zero exit, no ffmpeg child left, no hang; logs already started are closed, valid, with
// the frames scored before the fault.
//
// The live inputs are those of cli-signals.test.mjs: named pipes, a synthetic y4m reference
// fed 25 frames a second, the distorted MPEG-2 in MPEG-TS from an ffmpeg encoder, which
// vmaf-stream decodes with an ffmpeg child of its own.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, constants, existsSync, openSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { resolveFfmpegPath } from '../dist/decode/ffmpeg-path.js';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { score } from '../dist/index.js';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClip } from './helpers/golden.mjs';
import { childrenOf, commandLine, running } from './helpers/processes.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const WRITER = fileURLToPath(new URL('./helpers/fifo-writer.mjs', import.meta.url));
const LIVE_FRAMES = 3000;

describe('faults of the parts around us', function () {
  this.timeout(90000);
  let ffmpeg;
  let dir;
  let feeders = [];
  /** Files made once: a 60-frame reference y4m and its MPEG-2 distorted in MPEG-TS. */
  let media;

  before(async () => {
    ffmpeg = await resolveFfmpegPath();
    media = mkdtempSync(join(tmpdir(), 'vmaf-faults-media-'));
    const clip = goldenClip('ladder_320x180_300f');
    const make = (args) => assert.equal(spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', ...args]).status, 0, args.join(' '));
    make(['-i', clip.ref, '-frames:v', '60', join(media, 'ref.y4m')]);
    make(['-i', clip.dis, '-frames:v', '60', '-c:v', 'mpeg2video', '-q:v', '5', '-f', 'mpegts', join(media, 'dis.ts')]);
    make(['-i', clip.dis, '-frames:v', '60', '-c:v', 'libx264', '-preset', 'ultrafast', '-movflags', '+faststart', join(media, 'dis.mp4')]);
    // The first half of the mp4 (its index first: the frames of the rest are missing).
    const mp4 = readFileSync(join(media, 'dis.mp4'));
    writeFileSync(join(media, 'truncated.mp4'), mp4.subarray(0, mp4.length >> 1));
  });

  after(() => rmSync(media, { recursive: true, force: true }));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'vmaf-faults-'));
  });

  afterEach(() => {
    for (const feeder of feeders) feeder.kill('SIGKILL');
    feeders = [];
    rmSync(dir, { recursive: true, force: true });
  });

  function liveInputs() {
    const ref = join(dir, 'ref.fifo');
    const dis = join(dir, 'dis.fifo');
    for (const fifo of [ref, dis]) assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    feeders.push(spawn(process.execPath, [WRITER, ref, 'synth', '160x90', String(LIVE_FRAMES), '40'], { stdio: 'ignore' }));
    feeders.push(spawn(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25',
      '-frames:v', String(LIVE_FRAMES), '-c:v', 'mpeg2video', '-f', 'mpegts', '-y', dis], { stdio: 'ignore' }));
    return { ref, dis };
  }

  /** Starts the CLI; samples its children as it runs; `exited` resolves once it has exited. */
  function start(args, env = {}) {
    const cli = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    cli.stderr.setEncoding('utf8');
    cli.stderr.on('data', (text) => (stderr += text));
    const seen = new Map();
    const sample = setInterval(() => {
      for (const pid of childrenOf(cli.pid)) if (!seen.has(pid)) seen.set(pid, commandLine(pid));
    }, 20);
    const exited = new Promise((resolve) => cli.on('exit', (code, signal) => {
      clearInterval(sample);
      resolve({ code, signal, stderr });
    }));
    return { cli, exited, stderr: () => stderr, children: seen };
  }

  /** Waits (bounded by the test's timeout) for the CLI's ffmpeg decoder child. */
  async function decoderOf(run) {
    for (;;) {
      const pid = childrenOf(run.cli.pid).find((p) => /ffmpeg.*yuv4mpegpipe/.test(commandLine(p)));
      if (pid) return pid;
      assert.equal(await Promise.race([run.exited, sleep(50).then(() => undefined)]), undefined, `ended early: ${run.stderr()}`);
    }
  }

  async function waitForFrames(log, count, run) {
    while (!(existsSync(log) && readFileSync(log, 'utf8').split('"frameNum"').length - 1 >= count)) {
      assert.equal(await Promise.race([run.exited, sleep(50).then(() => undefined)]), undefined, `ended before ${count} frames: ${run.stderr()}`);
    }
  }

  function assertGone(run) {
    for (const [pid, line] of run.children) assert.ok(!running(pid), `child ${pid} (${line}) still runs after vmaf-stream exited`);
  }

  /** A JSON log that parses, with frames 0..n-1 (n returned), n at most `atMost`. */
  function assertCompleteLog(log, atMost) {
    const parsed = JSON.parse(readFileSync(log, 'utf8'));
    const frames = parsed.frames.map((f) => f.frameNum);
    assert.deepEqual(frames, Array.from({ length: frames.length }, (_, i) => i));
    assert.ok(frames.length <= atMost, `${frames.length} frames logged, the fault was at frame ${atMost}`);
    assert.ok(Number.isFinite(parsed.pooled_metrics.vmaf.mean));
    return frames.length;
  }

  /** The one error line; its frame number. */
  function errorFrame(stderr, input, what) {
    const lines = stderr.split('\n').filter((l) => l.startsWith('vmaf-stream: ') && !l.startsWith('vmaf-stream: warning:'));
    assert.equal(lines.length, 1, stderr);
    const escaped = input.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const m = new RegExp(`^vmaf-stream: ${escaped}: frame (\\d+): ${what.source}`).exec(lines[0]);
    assert.ok(m, lines[0]);
    return Number(m[1]);
  }

  describe('ffmpeg', () => {
    it('killed (SIGKILL) mid-stream: exit 1, the input and frame named, the log closed with the frames before', async () => {
      const { ref, dis } = liveInputs();
      const log = join(dir, 'out.json');
      const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', '--threads', '2', '--json', '-o', log, '-q']);
      await waitForFrames(log, 10, run);
      process.kill(await decoderOf(run), 'SIGKILL');
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const frame = errorFrame(stderr, dis, /ffmpeg was killed with signal SIGKILL while decoding it, after \d+ frames$/);
      assert.ok(frame >= 10, stderr);
      assertCompleteLog(log, frame);
      assertGone(run);
    });

    it('stalled (SIGSTOP) with --stall-timeout: E_INPUT_STALLED naming input and frame, ffmpeg stopped, exit 1', async () => {
      const { ref, dis } = liveInputs();
      const log = join(dir, 'out.json');
      const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', '--threads', '2', '--json', '-o', log, '-q', '--stall-timeout', '1.5']);
      await waitForFrames(log, 10, run);
      const decoder = await decoderOf(run);
      process.kill(decoder, 'SIGSTOP');
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const frame = errorFrame(stderr, dis, /no frame for 1\.5 s \(the stall timeout\): the input or ffmpeg stalled; ffmpeg was stopped$/);
      assertCompleteLog(log, frame);
      assertGone(run);
      assert.ok(!running(decoder), 'the stopped ffmpeg was killed');
    });

    it('a named pipe read natively (y4m) whose writer stops, with --stall-timeout: E_INPUT_STALLED naming it and the frame, exit 1', async () => {
      const { ref, dis } = liveInputs();
      const log = join(dir, 'out.json');
      const run = start(['-r', ref, '-d', dis, '--backend', 'cpu', '--threads', '2', '--json', '-o', log, '-q', '--stall-timeout', '1.5']);
      await waitForFrames(log, 10, run);
      process.kill(feeders[0].pid, 'SIGSTOP'); // the reference's writer: the pipe stays open, silent
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const frame = errorFrame(stderr, ref, /no frame for 1\.5 s \(the stall timeout\): the input stalled$/);
      assert.ok(frame >= 10, stderr);
      assertCompleteLog(log, frame);
      assertGone(run);
    });

    it('standard input (y4m) that stops sending, with --stall-timeout: E_INPUT_STALLED naming - and the frame, exit 1', async () => {
      const y4m = readFileSync(join(media, 'ref.y4m'));
      const headerEnd = y4m.indexOf(0x0a) + 1;
      const frameBytes = 'FRAME\n'.length + 320 * 180 * 3 / 2;
      const log = join(dir, 'out.json');
      const cli = spawn(process.execPath, [BIN, '-r', '-', '-d', join(media, 'ref.y4m'), '--backend', 'cpu', '--json', '-o', log, '-q', '--stall-timeout', '1'], { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      cli.stderr.setEncoding('utf8');
      cli.stderr.on('data', (text) => (stderr += text));
      cli.stdin.on('error', () => {});
      // Six frames, then nothing: standard input stays open.
      cli.stdin.write(y4m.subarray(0, headerEnd + 6 * frameBytes));
      const code = await new Promise((resolve) => cli.on('exit', resolve));
      cli.stdin.destroy();
      assert.equal(code, 1, stderr);
      assert.equal(errorFrame(stderr, '-', /no frame for 1 s \(the stall timeout\): the input stalled$/), 6);
      assertCompleteLog(log, 6);
    });

    // Opening a named pipe waits for a writer: with --stall-timeout that wait is bounded too,
    // on each path a pipe can take (y4m and raw read natively, anything else sniffed, then ffmpeg).
    for (const [name, extra, path] of [['in.y4m', [], 'the native y4m reader'], ['in.yuv', ['-w', '64', '-h', '64'], 'the native raw reader'], ['in.mp4', [], 'ffmpeg']]) {
      it(`a named pipe that never gets a writer (${path}), with --stall-timeout: E_INPUT_STALLED naming it, exit 1, within the timeout`, async () => {
        const fifo = join(dir, name);
        assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
        const other = name === 'in.yuv' ? fifo : join(media, 'ref.y4m');
        const began = Date.now();
        const run = start(['-r', other, '-d', fifo, ...extra, '--backend', 'cpu', '-q', '--stall-timeout', '1']);
        const { code, stderr } = await run.exited;
        const seconds = (Date.now() - began) / 1000;
        assert.equal(code, 1, stderr);
        assert.equal(stderr, `vmaf-stream: ${fifo}: no writer opened the named pipe in 1 s (the stall timeout): the input stalled\n`);
        assert.ok(seconds < 6, `${seconds} s`); // 1 s, the CLI's start-up, a loaded machine
        assertGone(run);
      });
    }

    it('a named pipe whose writer opens it but sends nothing (the sniff before ffmpeg), with --stall-timeout: E_INPUT_STALLED, exit 1', async () => {
      const fifo = join(dir, 'in.ts');
      assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
      // A writer that holds the pipe open, silent, for longer than the run may take.
      feeders.push(spawn('sh', ['-c', `exec 3>"${fifo}"; sleep 60`], { stdio: 'ignore' }));
      const run = start(['-r', join(media, 'ref.y4m'), '-d', fifo, '--backend', 'cpu', '-q', '--stall-timeout', '1']);
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      assert.equal(stderr, `vmaf-stream: ${fifo}: frame 0: no data for 1 s (the stall timeout): the input stalled\n`);
      assertGone(run);
    });

    it('a named pipe that never gets a writer (the library, stallTimeoutMs): the run errors, the blocked open is released, nothing keeps the process alive', async () => {
      const fifo = join(dir, 'in.y4m');
      assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
      // In this process: the error, then no reader left on the pipe (a writer's non-blocking
      // open fails with ENXIO only when no open for reading is pending or held).
      const error = await new Promise((resolve) => score(fifo, join(media, 'ref.y4m'), { backend: 'cpu', stallTimeoutMs: 500 }).subscribe({ error: resolve, complete: () => resolve(undefined) }));
      assert.equal(error?.code, 'E_INPUT_STALLED');
      assert.equal(error.message, `${fifo}: no writer opened the named pipe in 0.5 s (the stall timeout): the input stalled`);
      let open;
      for (let i = 0; i < 50; i++) {
        try {
          closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
          open = 'a reader is still there';
        } catch (err) {
          open = err.code;
        }
        if (open === 'ENXIO') break;
        await sleep(20);
      }
      assert.equal(open, 'ENXIO');
      // A child process that only subscribes (no process.exit): it must end on its own.
      const script = `import { score } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
        score(${JSON.stringify(fifo)}, ${JSON.stringify(join(media, 'ref.y4m'))}, { backend: 'cpu', stallTimeoutMs: 500 })
          .subscribe({ error: (e) => console.log(e.code), complete: () => console.log('complete') });`;
      const began = Date.now();
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20000 });
      assert.equal(r.signal, null, `still running after ${(Date.now() - began) / 1000} s: ${r.stderr}`);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, 'E_INPUT_STALLED\n');
    });

    it('--stall-timeout and --gpu-timeout take a positive number of seconds (exit 2 otherwise)', () => {
      for (const option of ['--stall-timeout', '--gpu-timeout']) {
        for (const bad of ['0', 'soon', '2s']) {
          const r = spawnSync(process.execPath, [BIN, '-r', 'a.y4m', '-d', 'b.y4m', option, bad], { encoding: 'utf8' });
          assert.equal(r.status, 2, r.stderr);
          assert.match(r.stderr, new RegExp(`${option} needs a positive number of seconds`));
        }
      }
    });

    it('a truncated mp4 (its second half missing): the frames there are scored, a warning names the input and both counts', () => {
      const log = join(dir, 'out.json');
      const dis = join(media, 'truncated.mp4');
      const r = spawnSync(process.execPath, [BIN, '-r', join(media, 'ref.y4m'), '-d', dis, '--backend', 'cpu', '--json', '-o', log, '-q'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 0, r.stderr);
      const decoded = JSON.parse(readFileSync(log, 'utf8')).frames.length;
      assert.ok(decoded > 0 && decoded < 60, `${decoded} frames`);
      assert.match(r.stderr, new RegExp(`warning: ${dis.replace(/[.]/g, '\\.')} ended before .*ref\\.y4m: .*truncated\\.mp4 has ${decoded} frames, .*ref\\.y4m has 60`));
    });

    it('an ffmpeg that cannot run (not executable): E_FFMPEG naming it, exit 1', () => {
      const fake = join(dir, 'ffmpeg');
      writeFileSync(fake, 'not a program');
      chmodSync(fake, 0o644);
      const r = spawnSync(process.execPath, [BIN, '-r', join(media, 'ref.y4m'), '-d', join(media, 'dis.ts'), '--ffmpeg', fake, '--backend', 'cpu', '-q'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /^vmaf-stream: .*ffmpeg/m);
      assert.ok(r.stderr.includes(fake), r.stderr);
    });
  });

  describe('--protocols', () => {
    const runWith = (args) => spawnSync(process.execPath, [BIN, ...args, '--backend', 'cpu', '-q'], { encoding: 'utf8', timeout: 60000 });

    it('a local file where only https is allowed: E_INPUT_NOT_ALLOWED naming it, exit 1, nothing opened', () => {
      const ref = join(media, 'ref.y4m');
      const r = runWith(['-r', ref, '-d', join(media, 'dis.ts'), '--protocols', 'https']);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`^vmaf-stream: ${ref.replace(/[.]/g, '\\.')}: is a local file \\(file\\), which this run does not allow \\(protocols: https\\)$`, 'm'));
    });

    it('ffmpeg protocol syntax (concat:) and standard input are refused unless listed', () => {
      const ref = join(media, 'ref.y4m');
      const concat = runWith(['-r', ref, '-d', `concat:${join(media, 'dis.ts')}|${join(media, 'dis.ts')}`, '--protocols', 'file']);
      assert.equal(concat.status, 1, concat.stderr);
      assert.match(concat.stderr, /: is a concat: input, which this run does not allow \(protocols: file\)$/m);
      const stdin = spawnSync(process.execPath, [BIN, '-r', ref, '-d', '-', '--protocols', 'file', '--backend', 'cpu', '-q'], { input: readFileSync(join(media, 'dis.ts')), encoding: 'utf8', timeout: 60000 });
      assert.equal(stdin.status, 1, stdin.stderr);
      assert.match(stdin.stderr, /^vmaf-stream: -: is standard input \(pipe\), which this run does not allow/m);
    });

    it('files allowed: scored as without the option; a playlist that reaches for http is stopped by ffmpeg\'s whitelist', () => {
      const ref = join(media, 'ref.y4m');
      const plain = runWith(['-r', ref, '-d', join(media, 'dis.ts'), '--json', '-o', join(dir, 'a.json')]);
      const allowed = runWith(['-r', ref, '-d', join(media, 'dis.ts'), '--json', '-o', join(dir, 'b.json'), '--protocols', 'file']);
      assert.equal(allowed.status, 0, allowed.stderr);
      assert.equal(plain.status, 0, plain.stderr);
      const frames = (f) => JSON.parse(readFileSync(join(dir, f), 'utf8')).frames;
      assert.deepEqual(frames('b.json'), frames('a.json'));
      // An HLS playlist is a local file; its segment is a URL, which ffmpeg must not fetch.
      const playlist = join(dir, 'list.m3u8');
      writeFileSync(playlist, '#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nhttp://127.0.0.1:9/segment.ts\n#EXT-X-ENDLIST\n');
      const hls = runWith(['-r', ref, '-d', playlist, '--protocols', 'file']);
      assert.equal(hls.status, 1, hls.stderr);
      assert.match(hls.stderr, new RegExp(`^vmaf-stream: ${playlist.replace(/[.]/g, '\\.')}: opens a protocol this run does not allow \\(ffmpeg says: Protocol 'http' not on whitelist 'file'!\\)$`, 'm'));
    });

    it('a bad list is a usage error (exit 2)', () => {
      const r = runWith(['-r', 'a.y4m', '-d', 'b.y4m', '--protocols', 'file,,https']);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /--protocols needs protocol names/);
    });
  });

  describe('output', () => {
    it('an unwritable path (a folder that is a file): a clear error, exit 1, before any ffmpeg starts', () => {
      const blocker = join(dir, 'file');
      writeFileSync(blocker, '');
      const log = join(blocker, 'out.json');
      const r = spawnSync(process.execPath, [BIN, '-r', join(media, 'ref.y4m'), '-d', join(media, 'dis.ts'), '--backend', 'cpu', '--json', '-o', log, '-q'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`^vmaf-stream: cannot write the log ${log.replace(/[.]/g, '\\.')}: ENOTDIR`, 'm'));
    });

    it('disk full (-o /dev/full) with a file input decoded by ffmpeg: exit 1, ENOSPC named, no child left', async function () {
      if (!existsSync('/dev/full')) this.skip();
      const run = start(['-r', join(media, 'ref.y4m'), '-d', join(media, 'dis.ts'), '--backend', 'cpu', '--xml', '-o', '/dev/full', '-q']);
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      assert.match(stderr, /^vmaf-stream: \/dev\/full: cannot write the log: ENOSPC/m);
      assertGone(run);
    });
  });

  describe('frames too large', () => {
    /** A y4m whose header declares `fields`, with `frames` frames of `frameBytes` (a sparse file: holes, no disk used). */
    function largeY4m(fields, frameBytes, frames) {
      const file = join(dir, 'large.y4m');
      const header = Buffer.from(`YUV4MPEG2 ${fields} F25:1 Ip A1:1\n`, 'latin1');
      writeFileSync(file, Buffer.concat([header, Buffer.from('FRAME\n', 'latin1'), Buffer.alloc(64, 16)]));
      if (frames > 0) truncateSync(file, header.length + frames * (6 + frameBytes));
      return file;
    }

    it('for the host (a 32768x32768 4:4:4 16-bit header, a few bytes of data): E_FRAME_TOO_LARGE naming input, frame and bytes, exit 1, at once', () => {
      const file = largeY4m('W32768 H32768 C444p16', 0, 0);
      const log = join(dir, 'out.json');
      // psnr reads chroma: the frame's slot holds all three planes, 6 GiB.
      const r = spawnSync(process.execPath, [BIN, '-r', file, '-d', file, '--feature', 'psnr', '--backend', 'cpu', '--json', '-o', log, '-q'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 1, r.stderr);
      const escaped = file.replace(/[.]/g, '\\.');
      assert.match(r.stderr, new RegExp(`^vmaf-stream: ${escaped}: frame 0: a 32768x32768 16-bit frame needs a 6442450944-byte buffer: over the \\d+ bytes one buffer can hold on this host$`, 'm'));
      assert.doesNotMatch(r.stderr, /internal error|RangeError/);
    });

    // Overcommit: slots the kernel would grant virtually, then take back with the OOM killer
    // as they are touched. The run refuses them before any exists (src/pool/memory-budget.ts).
    it('a pool larger than the machine\'s available memory (MemAvailable, real): E_OUT_OF_MEMORY with the frame size, planned and available bytes, exit 1, at once', () => {
      const available = Number(/^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))[1]) * 1024;
      // 17 inputs (a reference, 16 renditions), --threads 1: 4 frames in flight, 6 slots each.
      const sources = 17;
      const slots = 6;
      const width = 32768;
      const height = Math.ceil((2 * available) / (sources * slots) / (width * 2));
      assert.ok(height <= 32768, `${available} bytes available: more than a y4m of 32768x32768 16-bit frames can exceed`);
      const file = largeY4m(`W${width} H${height} C420p16`, 0, 0);
      const slot = width * height * 2;
      const began = Date.now();
      const r = spawnSync(process.execPath, [BIN, '-r', file, ...Array.from({ length: 16 }, (_, k) => ['-d', `name=r${k}:path=${file}`]).flat(), '--backend', 'cpu', '--threads', '1', '-q'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 1, r.stderr);
      assert.ok(Date.now() - began < 20000);
      const m = new RegExp(`^vmaf-stream: ${file.replace(/[.]/g, '\\.')}: a ${width}x${height} 16-bit frame \\(${slot} bytes, luma\\) needs ${sources * slots * slot} bytes of frame buffers \\(17 inputs x 6 pool slots\\), over the (\\d+) bytes this machine can give \\(MemAvailable in /proc/meminfo\\): use fewer frames in flight \\(4 now: maxFramesInFlight, or fewer --threads\\) or fewer renditions at once\n$`).exec(r.stderr);
      assert.ok(m, r.stderr);
      assert.ok(Math.abs(Number(m[1]) - available) < available / 4, `${m[1]} reported, ${available} read here`);
    });

    it('the GPU staging rings count too (the available bytes as a test sets them): E_OUT_OF_MEMORY, exit 1; enough memory scores as before', function () {
      if (!backendsUnderTest().includes('gpu')) this.skip();
      const ref = join(media, 'ref.y4m');
      // 320x180 8-bit luma: 57600 bytes a slot; 2 inputs x 8 pool slots (--threads 2) + 2 x 6 staging slots.
      const planned = 2 * 8 * 57600 + 2 * 6 * 57600;
      const run = (bytes) => spawnSync(process.execPath, [BIN, '-r', ref, '-d', ref, '--backend', 'gpu', '--threads', '2', '--frame_cnt', '2', '-q'], { encoding: 'utf8', timeout: 120000, env: { ...process.env, VMAF_STREAM_TEST_AVAILABLE_BYTES: String(bytes) } });
      const refused = run(planned - 1);
      assert.equal(refused.status, 1, refused.stderr);
      assert.match(refused.stderr, new RegExp(`^vmaf-stream: .*ref\\.y4m: a 320x180 8-bit frame \\(57600 bytes, luma\\) needs ${planned} bytes of frame buffers \\(2 inputs x 8 pool slots \\+ 2 x 6 GPU staging slots of 57600 bytes\\), over the ${planned - 1} bytes this machine can give \\(VMAF_STREAM_TEST_AVAILABLE_BYTES\\): use fewer frames in flight \\(6 now`, 'm'));
      const scored = run(planned);
      assert.equal(scored.status, 0, scored.stderr);
      assert.match(scored.stdout + scored.stderr, /^vmaf: \d+\.\d+$/m);
    });

    it('the library: score() errors with E_OUT_OF_MEMORY before any frame (the available bytes as a test sets them)', async () => {
      const ref = join(media, 'ref.y4m');
      process.env.VMAF_STREAM_TEST_AVAILABLE_BYTES = '100000';
      try {
        const seen = { frames: 0, error: undefined };
        await new Promise((resolve) => score(ref, ref, { backend: 'cpu', maxFramesInFlight: 2 }).subscribe({ next: () => seen.frames++, error: (e) => resolve((seen.error = e)), complete: resolve }));
        assert.equal(seen.frames, 0);
        assert.equal(seen.error?.code, 'E_OUT_OF_MEMORY');
        // 2 frames in flight: 4 pool slots per input.
        assert.match(seen.error.message, new RegExp(`a 320x180 8-bit frame \\(57600 bytes, luma\\) needs ${2 * 4 * 57600} bytes .* over the 100000 bytes`));
      } finally {
        delete process.env.VMAF_STREAM_TEST_AVAILABLE_BYTES;
      }
    });

    it('for the GPU (planes over the adapter\'s storage binding limit): E_GPU naming input, frame, sizes and the limit, exit 1', async function () {
      if (!backendsUnderTest().includes('gpu')) this.skip();
      process.env.XDG_RUNTIME_DIR ??= '/tmp/xdg-runtime-0';
      const gpu = await openGpuDevice();
      const limit = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
      gpu.destroy();
      // Luma of 16-bit samples just over the limit, 8192 wide (lavapipe: 128 MiB, 8192x8200).
      const height = Math.floor(limit / (8192 * 2)) + 8;
      if (8192 * height * 2 > 1 << 30) this.skip(); // an adapter with large bindings: not a test-sized frame
      const frameBytes = 8192 * height * 3; // 4:2:0, 2 bytes a sample
      const file = largeY4m(`W8192 H${height} C420p16`, frameBytes, 1);
      const r = spawnSync(process.execPath, [BIN, '-r', file, '-d', file, '--backend', 'gpu', '-q'], { encoding: 'utf8', timeout: 120000 });
      assert.equal(r.status, 1, r.stderr);
      const escaped = file.replace(/[.]/g, '\\.');
      assert.match(r.stderr, new RegExp(`^vmaf-stream: ${escaped}: frame 0: .*a 8192x${height} 16-bit frame's planes take ${8192 * height * 2} bytes, over this adapter's (maxBufferSize|maxStorageBufferBindingSize) \\(${limit}\\): too large for `, 'm'));
    });
  });

  describe('gpu', function () {
    before(function () {
      if (!backendsUnderTest().includes('gpu')) this.skip();
      process.env.XDG_RUNTIME_DIR ??= '/tmp/xdg-runtime-0';
    });

    it('a device lost mid-run (the CLI): E_GPU naming input and frame, exit 1, the log valid to the last good frame, ffmpeg gone', async () => {
      const dis = join(media, 'dis.ts');
      const log = join(dir, 'out.json');
      const run = start(['-r', join(media, 'ref.y4m'), '-d', dis, '--backend', 'gpu', '--json', '-o', log, '-q', '--frame_cnt', '12'], { VMAF_STREAM_TEST_LOSE_GPU_AT: '5' });
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const frame = errorFrame(stderr, dis, /.*device lost \(destroyed\)/);
      // The hook destroys the device once frame 4 is out; frames already read back by then
      // (those submitted in its batch, on the gpu thread) still come out, in order, as in the
      // library's test below. The error names the first frame that did not.
      assert.ok(frame >= 5 && frame < 12, stderr);
      assert.equal(assertCompleteLog(log, frame), frame);
      assert.doesNotMatch(stderr, /ended before/);
      assertGone(run);
    });

    // The timeout is well above a frame's time on a loaded software adapter: only the hang meets it.
    it('a GPU that stops answering (its fences never settle) with --gpu-timeout: E_GPU naming input and frame, exit 1, the log valid, ffmpeg gone', async function () {
      this.timeout(300000); // start-up on a loaded software adapter, then the 20 s wait
      const dis = join(media, 'dis.ts');
      const log = join(dir, 'out.json');
      const run = start(['-r', join(media, 'ref.y4m'), '-d', dis, '--backend', 'gpu', '--json', '-o', log, '-q', '--frame_cnt', '12', '--gpu-timeout', '20'], { VMAF_STREAM_TEST_HANG_GPU_AT: '5' });
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const frame = errorFrame(stderr, dis, /.*: no answer from the GPU in 20 s \(the GPU timeout\) \(frames before it were scored\)$/);
      assert.ok(frame >= 5 && frame < 12, stderr);
      assert.equal(assertCompleteLog(log, frame), frame);
      assertGone(run);
    });

    it('a device lost mid-run (the library): the Observable errors once, with E_GPU naming input and frame', async () => {
      const dis = join(media, 'dis.ts');
      process.env.VMAF_STREAM_TEST_LOSE_GPU_AT = '3';
      try {
        const seen = { frames: [], errors: [], completed: 0 };
        await new Promise((resolve) => {
          score(join(media, 'ref.y4m'), dis, { backend: 'gpu', frameCnt: 10 }).subscribe({
            next: (r) => seen.frames.push(r.index),
            error: (e) => {
              seen.errors.push(e);
              // Anything after the error would arrive within this pause.
              setTimeout(resolve, 500);
            },
            complete: () => {
              seen.completed++;
              resolve();
            },
          });
        });
        assert.equal(seen.completed, 0);
        assert.equal(seen.errors.length, 1);
        const [error] = seen.errors;
        assert.equal(error.code, 'E_GPU');
        // The hook destroys the device once frame 2 is out. Frames whose stats were already
        // read back by then (those submitted in frame 2's batch: the gpu backend submits the
        // groups queued together in one batch) still come out, in order; the error names the
        // first frame that did not.
        const k = seen.frames.length;
        assert.ok(k >= 3 && k < 10, `${k} frames before the error`);
        assert.deepEqual(seen.frames, [...Array(k).keys()]);
        assert.ok(error.message.startsWith(`${dis}: frame ${k}: `), error.message);
        assert.match(error.message, /device lost/);
      } finally {
        delete process.env.VMAF_STREAM_TEST_LOSE_GPU_AT;
      }
    });

    // --gpu-timeout bounds more than the fences: a driver that hangs while the device is
    // opened, or while the kernels compile (VMAF_STREAM_TEST_HANG_GPU_AT=device / =compile:
    // those answers never come), ends the run naming the stage, with nothing else pending
    // (y4m inputs read natively: no ffmpeg child holds the process).
    it('a device that never opens (requestDevice does not answer) with --gpu-timeout: E_GPU naming the stage and the adapter, exit 1', async () => {
      const began = Date.now();
      const run = start(['-r', join(media, 'ref.y4m'), '-d', join(media, 'ref.y4m'), '--backend', 'gpu', '-q', '--gpu-timeout', '2'], { VMAF_STREAM_TEST_HANG_GPU_AT: 'device' });
      const { code, stderr } = await run.exited;
      const seconds = (Date.now() - began) / 1000;
      assert.equal(code, 1, stderr);
      assert.match(stderr, /^vmaf-stream: opening a WebGPU device on '[^']+': no answer from the GPU in 2 s \(the GPU timeout\)\n$/);
      assert.ok(seconds >= 2 && seconds < 30, `${seconds} s`);
    });

    it('kernels that never compile with --gpu-timeout: E_GPU naming input, frame 0, the adapter and the kernel, exit 1', async () => {
      const ref = join(media, 'ref.y4m');
      const run = start(['-r', ref, '-d', ref, '--backend', 'gpu', '-q', '--gpu-timeout', '5'], { VMAF_STREAM_TEST_HANG_GPU_AT: 'compile' });
      const { code, stderr } = await run.exited;
      assert.equal(code, 1, stderr);
      const lines = stderr.split('\n').filter((l) => l.startsWith('vmaf-stream: ') && !l.startsWith('vmaf-stream: warning:'));
      assert.equal(lines.length, 1, stderr);
      assert.match(lines[0], new RegExp(`^vmaf-stream: ${ref.replace(/[.]/g, '\\.')}: frame 0: [^:]+: compiling the [^:]+ kernel: no answer from the GPU in 5 s \\(the GPU timeout\\)$`));
    });

    it('kernels that never compile (the library, gpuTimeoutMs): the Observable errors with E_GPU naming the stage', async () => {
      process.env.VMAF_STREAM_TEST_HANG_GPU_AT = 'compile';
      try {
        const error = await new Promise((resolve) => score(join(media, 'ref.y4m'), join(media, 'ref.y4m'), { backend: 'gpu', gpuTimeoutMs: 3000 }).subscribe({ error: resolve, complete: () => resolve(undefined) }));
        assert.equal(error?.code, 'E_GPU');
        assert.match(error.message, /: frame 0: [^:]+: compiling the [^:]+ kernel: no answer from the GPU in 3 s \(the GPU timeout\)$/);
      } finally {
        delete process.env.VMAF_STREAM_TEST_HANG_GPU_AT;
      }
    });
  });
});
