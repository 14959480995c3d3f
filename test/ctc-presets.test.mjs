// libvmaf's common-test-condition presets end to end: `vmaf-stream --aom_ctc v7.0` and
// `--nflx_ctc v1.0`, run as a user runs them (the CLI, a JSON log at full precision), on both
// backends, against libvmaf 3.2.0's logs of the same presets on every golden clip that has
// them (the carried clips, and ../shared/golden's where it exists): every frame's every
// key, the pooled metrics and the aggregate ones (aom's APSNR) exactly equal; and where
// libvmaf refused the clip, a refusal of ours too (MS-SSIM's smallest picture).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendsUnderTest } from './helpers/env.mjs';
import { goldenClips } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const PRESETS = [
  { kind: 'libvmaf-aom-ctc', args: ['--aom_ctc', 'v7.0'] },
  { kind: 'libvmaf-nflx-ctc', args: ['--nflx_ctc', 'v1.0'] },
];

/** The CLI's exit code and standard error. */
function runCli(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Every value of `golden` (frames, pooled_metrics, aggregate_metrics) in `ours`, exactly; returns how many. */
function assertSameValues(ours, golden, what) {
  let compared = 0;
  assert.equal(ours.frames.length, golden.frames.length, `${what}: every frame is logged`);
  for (const [i, frame] of golden.frames.entries()) {
    assert.equal(ours.frames[i].frameNum, frame.frameNum);
    assert.deepEqual(Object.keys(ours.frames[i].metrics), Object.keys(frame.metrics), `${what}: frame ${i}'s keys, in libvmaf's order`);
    for (const [key, value] of Object.entries(frame.metrics)) {
      assert.equal(ours.frames[i].metrics[key], value, `${what}: frame ${i}: ${key}`);
      compared++;
    }
  }
  for (const [key, methods] of Object.entries(golden.pooled_metrics ?? {})) {
    for (const [method, value] of Object.entries(methods)) {
      assert.equal(ours.pooled_metrics?.[key]?.[method], value, `${what}: pooled ${key} ${method}`);
      compared++;
    }
  }
  for (const [key, value] of Object.entries(golden.aggregate_metrics ?? {})) {
    assert.equal(ours.aggregate_metrics?.[key], value, `${what}: aggregate ${key}`);
    compared++;
  }
  return compared;
}

describe('CTC presets end to end (the CLI against libvmaf 3.2.0)', function () {
  this.timeout(900_000);
  let tmp;
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'vmafs-ctc-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  for (const backend of backendsUnderTest()) {
    describe(`${backend} backend`, function () {
      const totals = { compared: 0, refusals: 0 };
      after(() => console.log(`      ${backend}: ${totals.compared} values exactly equal to libvmaf's, ${totals.refusals} refusals as libvmaf's`));
      for (const { kind, args } of PRESETS) {
        const clips = goldenClips({ shared: true }).filter((clip) => clip.hasLog(kind));
        it(`${args.join(' ')}: has golden clips to run`, () => assert.ok(clips.length >= 10, `found ${clips.length}`));
        for (const clip of clips) {
          it(`${args.join(' ')}: ${clip.name}${clip.origin === 'shared' ? ' (shared)' : ''}`, async function () {
            const golden = clip.log(kind);
            const out = join(tmp, `${backend}-${kind}-${clip.name}.json`);
            const { code, stderr } = await runCli(['-r', clip.ref, '-d', clip.dis, ...args, '--backend', backend, '--threads', '2', '--precision', '17', '-q', '--json', '-o', out]);
            if (golden.refused !== undefined) {
              // libvmaf 3.2.0 says only "problem flushing context"; ours names the extractor (MS-SSIM
              // or CAMBI) and the smallest picture it takes.
              assert.notEqual(code, 0, `libvmaf refused (${golden.refused}); we scored it`);
              assert.match(stderr, /(float_ms_ssim|cambi): .*(too small|at least)/, stderr);
              totals.refusals++;
              return;
            }
            assert.equal(code, 0, stderr);
            totals.compared += assertSameValues(JSON.parse(readFileSync(out, 'utf8')), golden, `${clip.name} ${args.join(' ')}`);
          });
        }
      }
    });
  }
});
