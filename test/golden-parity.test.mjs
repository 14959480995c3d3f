// The parity gate: every golden clip the repository carries, and those of ../shared/golden
// it does not where that folder exists (libvmaf 3.2.0's own scores at full precision),
// scored by vmaf-stream. Integer features within 1e-6, VMAF within 1e-4,
// every frame present. Exact equality is the target: the counts are printed.
import assert from 'node:assert/strict';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../dist/index.js';
import { openFrameSource } from '../dist/decode/open-source.js';
import { openFfmpegSource } from '../dist/decode/ffmpeg-source.js';
import { backendsUnderTest } from './helpers/env.mjs';
import { carriedClipNames, goldenClips } from './helpers/golden.mjs';
import { CARRIED_CLIPS } from './helpers/carried-clips.mjs';

const FEATURE_TOLERANCE = 1e-6;
const SCORE_TOLERANCE = 1e-4;
const MODELS = ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg', 'version=vmaf_4k_v0.6.1:name=vmaf_4k'];
const SCORES = new Set(['vmaf', 'vmaf_neg', 'vmaf_4k']);

const clips = goldenClips({ shared: true });

/**
 * An input as libvmaf read it: decoded in clip.json's `scored_as` where the file's own bit
 * depth differs (../shared's HFR clip: an 8-bit AV1 encode scored at 10 bits).
 */
async function inputAsScored(path, scoredAs) {
  const source = openFrameSource(path);
  const bits = Number(/p(\d+)/.exec(scoredAs)?.[1] ?? 8);
  if ((await source.format()).bitDepth === bits) return source;
  await source.close();
  return openFfmpegSource(path, { pixelFormat: scoredAs });
}

for (const backend of backendsUnderTest()) {
  describe(`golden parity (${backend} backend)`, function () {
    const totals = { compared: 0, exact: 0 };
    after(() => console.log(`      ${backend}: ${totals.exact} of ${totals.compared} values exactly equal to libvmaf`));

    it('has the golden clips the repository carries', () => assert.deepEqual(carriedClipNames, CARRIED_CLIPS));

    for (const clip of clips) {
      it(clip.origin === 'repo' ? clip.name : `${clip.name} (shared)`, async function () {
        const golden = clip.log();
        const { scored_as: scoredAs } = clip.info;
        const [ref, dis] = [await inputAsScored(clip.ref, scoredAs), await inputAsScored(clip.dis, scoredAs)];
        const results = await lastValueFrom(score(ref, dis, { backend, models: MODELS, threads: 2 }).pipe(toArray()));
        assert.equal(results.length, golden.frames.length, 'every frame is scored');
        const worst = {};
        for (const [i, frame] of golden.frames.entries()) {
          const ours = { ...results[i].features, ...results[i].scores };
          assert.equal(results[i].index, frame.frameNum);
          for (const [key, expected] of Object.entries(frame.metrics)) {
            if (!(key.startsWith('integer_vif') || key.startsWith('integer_adm_') || key.startsWith('integer_adm2') || key.startsWith('integer_adm3') || key.startsWith('integer_aim') || key === 'integer_motion2' || key === 'integer_motion3' || SCORES.has(key))) continue;
            const actual = ours[key];
            assert.equal(typeof actual, 'number', `frame ${i}: ${key} is computed`);
            const diff = Math.abs(actual - expected);
            worst[key] = Math.max(worst[key] ?? 0, diff);
            totals.compared++;
            if (actual === expected) totals.exact++;
            const tolerance = SCORES.has(key) ? SCORE_TOLERANCE : FEATURE_TOLERANCE;
            assert.ok(diff <= tolerance, `frame ${i}: ${key} = ${actual}, libvmaf ${expected} (diff ${diff})`);
          }
        }
        const inexact = Object.entries(worst).filter(([, d]) => d > 0);
        if (inexact.length) console.log(`        max |diff|: ${inexact.map(([k, d]) => `${k} ${d.toExponential(2)}`).join(', ')}`);
      });
    }
  });
}
