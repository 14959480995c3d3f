// The command line as a user runs it: exit codes, messages, and logs on disk.
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const clip = goldenClip('src01_160x90_8bit');
const REF = clip.ref;
const DIS = clip.dis;
const golden = clip.log();
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-cli-'));

function cli(args, input) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 120000 });
}

describe('cli', function () {
  it('prints its version and help', () => {
    const version = cli(['--version']);
    assert.equal(version.status, 0);
    assert.match(version.stdout, /^vmaf-stream \d+\.\d+\.\d+ \(libvmaf 3\.2\.0/);
    const help = cli(['--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--frame_skip_ref/);
  });

  it('exits 2 on usage errors', () => {
    for (const args of [['-r', REF], ['-r', REF, '-d', DIS, '--backend', 'tpu'], ['-r', REF, '-d', DIS, '--threads', 'x'], ['--bogus']]) {
      const r = cli(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /vmaf-stream: /);
    }
  });

  it('-r - with -d -: a usage error (only one input can read standard input), exit 2', () => {
    for (const args of [['-r', '-', '-d', '-'], ['-r', REF, '-d', '-', '-d', 'name=again:path=-']]) {
      const r = cli([...args, '--backend', 'cpu', '-q'], readFileSync(REF));
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^vmaf-stream: (-r - and -d -|two -d -): only one input can read standard input/);
      assert.doesNotMatch(r.stderr, /empty/);
    }
  });

  it('writes a libvmaf-compatible JSON log equal to libvmaf at --precision 17', () => {
    const out = join(tmp, 'out.json');
    const r = cli(['-r', REF, '-d', DIS, '--backend', 'cpu', '--json', '--precision', '17', '-o', out, '-q', '-m', 'version=vmaf_v0.6.1:name=vmaf']);
    assert.equal(r.status, 0, r.stderr);
    const log = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(log.frames.length, golden.frames.length);
    for (const [i, frame] of golden.frames.entries()) {
      assert.equal(log.frames[i].frameNum, frame.frameNum);
      assert.ok(Math.abs(log.frames[i].metrics.vmaf - frame.metrics.vmaf) <= 1e-4, `frame ${i} vmaf`);
      assert.ok(Math.abs(log.frames[i].metrics.integer_adm2 - frame.metrics.integer_adm2) <= 1e-6, `frame ${i} adm2`);
    }
    assert.ok(Math.abs(log.pooled_metrics.vmaf.mean - golden.pooled_metrics.vmaf.mean) <= 1e-4);
    assert.ok(Math.abs(log.pooled_metrics.vmaf.harmonic_mean - golden.pooled_metrics.vmaf.harmonic_mean) <= 1e-4);
  });

  it('streams NDJSON to standard output, one line per frame', () => {
    const r = cli(['-r', REF, '-d', DIS, '--backend', 'cpu', '--ndjson', '-o', '-', '-q', '--frame_cnt', '5']);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const frames = lines.filter((l) => 'frameNum' in l);
    assert.equal(frames.length, 5);
    assert.deepEqual(frames.map((f) => f.frameNum), [0, 1, 2, 3, 4]);
    assert.ok(Math.abs(frames[2].metrics.vmaf - golden.frames[2].metrics.vmaf) <= 1e-4);
  });

  it('reads y4m from standard input', () => {
    const r = cli(['-r', '-', '-d', DIS, '--backend', 'cpu', '--json', '-o', '-', '-q', '--precision', '17'], readFileSync(REF));
    assert.equal(r.status, 0, r.stderr);
    const log = JSON.parse(r.stdout);
    assert.equal(log.frames.length, golden.frames.length);
    assert.ok(Math.abs(log.frames[7].metrics.vmaf - golden.frames[7].metrics.vmaf) <= 1e-4);
  });

  it('prints the pooled score per model at the end', () => {
    const r = cli(['-r', REF, '-d', DIS, '--backend', 'cpu']);
    assert.equal(r.status, 0, r.stderr);
    const m = /vmaf: (\d+\.\d{6})/.exec(r.stderr);
    assert.ok(m, r.stderr);
    assert.ok(Math.abs(Number(m[1]) - golden.pooled_metrics.vmaf.mean) < 1e-5);
  });

  describe('bad input: a clear error naming the input, exit 1, no crash', () => {
    const cases = {
      'a missing file': () => [['-r', join(tmp, 'nope.mp4'), '-d', DIS], /nope\.mp4/],
      'a non-video file': () => {
        const text = join(tmp, 'notes.txt');
        writeFileSync(text, 'this is not a video\n'.repeat(50));
        return [['-r', text, '-d', DIS], /notes\.txt/];
      },
      'a truncated last frame': () => {
        const cut = join(tmp, 'cut.y4m');
        const bytes = readFileSync(DIS);
        writeFileSync(cut, bytes.subarray(0, bytes.length - 1000));
        return [['-r', REF, '-d', cut], /cut\.y4m.*frame 47/];
      },
      'a corrupt y4m header': () => {
        const bad = join(tmp, 'bad.y4m');
        writeFileSync(bad, Buffer.concat([Buffer.from('YUV4MPEG2 W160 Hx F25:1 C420\n'), readFileSync(DIS).subarray(40)]));
        return [['-r', REF, '-d', bad], /bad\.y4m/];
      },
      'mismatched sizes': () => [['-r', REF, '-d', goldenClip('negated_256x144_2f').dis], /160x90.*256x144|256x144.*160x90/],
      'zero frames': () => {
        const empty = join(tmp, 'empty.y4m');
        writeFileSync(empty, 'YUV4MPEG2 W160 H90 F25:1 Ip A1:1 C420jpeg\n');
        return [['-r', empty, '-d', DIS], /empty\.y4m/];
      },
      'frames too small for VMAF': () => {
        const tiny = join(tmp, 'tiny.y4m');
        const frame = Buffer.alloc(16 * 16 * 3 / 2, 128);
        writeFileSync(tiny, Buffer.concat([Buffer.from('YUV4MPEG2 W16 H16 F25:1 C420jpeg\n'), Buffer.from('FRAME\n'), frame, Buffer.from('FRAME\n'), frame]));
        return [['-r', tiny, '-d', tiny], /tiny\.y4m.*(minimum|at least)/];
      },
    };
    for (const [name, make] of Object.entries(cases)) {
      it(name, () => {
        const [args, pattern] = make();
        const r = cli([...args, '--backend', 'cpu', '-q']);
        assert.equal(r.status, 1, `exit status for ${name}: ${r.stderr}`);
        assert.match(r.stderr, pattern);
        assert.doesNotMatch(r.stderr, /internal error|    at /);
      });
    }
  });

  it('warns when the inputs have different lengths and scores up to the shorter', () => {
    const short = join(tmp, 'short.y4m');
    const bytes = readFileSync(DIS);
    const frameBytes = 6 + 160 * 90 * 1.5;
    const headerEnd = bytes.indexOf(0x0a) + 1;
    writeFileSync(short, bytes.subarray(0, headerEnd + 10 * frameBytes));
    const r = cli(['-r', REF, '-d', short, '--backend', 'cpu', '--ndjson', '-o', '-', '-q']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /48.*10|10.*48/);
    assert.equal(r.stdout.trim().split('\n').filter((l) => l.includes('frameNum')).length, 10);
  });

  (backendsUnderTest().includes('gpu') ? describe : describe.skip)('gpu backend: only vmaf-stream\'s own lines on stderr', function () {
    this.timeout(300000);
    // A small synthetic clip, so that the test needs nothing beyond the repository.
    const clip3 = join(tmp, 'synth3.y4m');
    before(() => {
      const w = spawnSync(process.execPath, [fileURLToPath(new URL('./helpers/fifo-writer.mjs', import.meta.url)), clip3, 'synth', '160x90', '3', '0'], { encoding: 'utf8' });
      assert.equal(w.status, 0, w.stderr);
    });
    const ours = /^(vmaf-stream: .*|vmaf: \d+\.\d{6})$/;
    const dawn = /^Warning: .* artificially reduced /;

    it('without --verbose: no line of Dawn\'s, the pooled score on a line of its own', () => {
      const r = cli(['-r', clip3, '-d', clip3, '--backend', 'gpu', '-o', join(tmp, 'gpu.xml')]);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(r.stderr.endsWith('\n'), JSON.stringify(r.stderr));
      const lines = r.stderr.slice(0, -1).split('\n');
      for (const line of lines) assert.match(line, ours);
      assert.match(r.stderr, /^vmaf: \d+\.\d{6}$/m);
    });

    it('with --verbose (or VMAF_STREAM_VERBOSE=1): Dawn\'s lines too', function () {
      const verbose = cli(['-r', clip3, '-d', clip3, '--backend', 'gpu', '-o', join(tmp, 'gpu-v.xml'), '--verbose']);
      assert.equal(verbose.status, 0, verbose.stderr);
      for (const line of verbose.stderr.slice(0, -1).split('\n')) assert.ok(ours.test(line) || dawn.test(line), line);
      // Dawn clamps a Vulkan limit on Mesa's lavapipe and says so: proof that the quiet run hid it.
      if (!/software adapter \(llvmpipe/.test(verbose.stderr)) return;
      assert.match(verbose.stderr, dawn);
      const env = spawnSync(process.execPath, [BIN, '-r', clip3, '-d', clip3, '--backend', 'gpu', '-o', join(tmp, 'gpu-e.xml')], {
        encoding: 'utf8', env: { ...process.env, VMAF_STREAM_VERBOSE: '1' }, timeout: 120000,
      });
      assert.equal(env.status, 0, env.stderr);
      assert.match(env.stderr, dawn);
    });
  });
});
