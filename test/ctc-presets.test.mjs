// libvmaf's common-test-condition presets end to end: `vmaf-stream --aom_ctc v7.0` and
// `--nflx_ctc v1.0`, run as a user runs them (the CLI, a JSON log at full precision), on both
// backends, against libvmaf 3.2.0's logs of the same presets on every golden clip that has
// them (the carried clips, and ../shared/golden's where it exists): every frame's every
// key, the pooled metrics and the aggregate ones (aom's APSNR) exactly equal; and where
// libvmaf refused the clip, a refusal of ours too (MS-SSIM's smallest picture). On the gpu
// backend a clip over 100 frames is scored over its first 62 frames and its first 60 compared
// (helpers/env.mjs gpuPrefixOf); VMAF_TEST_FULL=1 scores it whole.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendsUnderTest, gpuPrefixOf } from './helpers/env.mjs';
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

/**
 * Every value of `golden` (frames, pooled_metrics, aggregate_metrics) in `ours`, exactly; returns
 * how many. With `prefix` (gpuPrefixOf), ours scored only golden's first `prefix.scored` frames:
 * the first `prefix.compared` are compared, and no pooled or aggregate value (golden's are over
 * every frame).
 */
function assertSameValues(ours, golden, what, prefix = undefined) {
  let compared = 0;
  const frames = prefix === undefined ? golden.frames : golden.frames.slice(0, prefix.compared);
  assert.equal(ours.frames.length, prefix === undefined ? frames.length : prefix.scored, `${what}: every frame is logged`);
  for (const [i, frame] of frames.entries()) {
    assert.equal(ours.frames[i].frameNum, frame.frameNum);
    assert.deepEqual(Object.keys(ours.frames[i].metrics), Object.keys(frame.metrics), `${what}: frame ${i}'s keys, in libvmaf's order`);
    for (const [key, value] of Object.entries(frame.metrics)) {
      assert.equal(ours.frames[i].metrics[key], value, `${what}: frame ${i}: ${key}`);
      compared++;
    }
  }
  if (prefix !== undefined) return compared;
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
            const prefix = backend === 'gpu' && golden.frames ? gpuPrefixOf(golden.frames.length) : undefined;
            const count = prefix === undefined ? [] : ['--frame_cnt', String(prefix.scored)];
            const { code, stderr } = await runCli(['-r', clip.ref, '-d', clip.dis, ...args, ...count, '--backend', backend, '--threads', '2', '--precision', '17', '-q', '--json', '-o', out]);
            if (golden.refused !== undefined) {
              // libvmaf 3.2.0 says only "problem flushing context"; ours names the extractor (MS-SSIM
              // or CAMBI) and the smallest picture it takes.
              assert.notEqual(code, 0, `libvmaf refused (${golden.refused}); we scored it`);
              assert.match(stderr, /(float_ms_ssim|cambi): .*(too small|at least)/, stderr);
              totals.refusals++;
              return;
            }
            assert.equal(code, 0, stderr);
            totals.compared += assertSameValues(JSON.parse(readFileSync(out, 'utf8')), golden, `${clip.name} ${args.join(' ')}`, prefix);
          });
        }
      }
    });
  }
});
