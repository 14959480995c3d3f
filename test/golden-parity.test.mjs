// The parity gate: every golden clip of ../shared/golden (libvmaf 3.2.0's own scores at
// full precision) scored by vmaf-stream. Integer features within 1e-6, VMAF within 1e-4,
// every frame present. Exact equality is the target: the counts are printed.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../dist/index.js';
import { goldenDir, backendsUnderTest } from './helpers/env.mjs';

const FEATURE_TOLERANCE = 1e-6;
const SCORE_TOLERANCE = 1e-4;
const MODELS = ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg', 'version=vmaf_4k_v0.6.1:name=vmaf_4k'];
const SCORES = new Set(['vmaf', 'vmaf_neg', 'vmaf_4k']);

const clips = existsSync(goldenDir) ? readdirSync(goldenDir).filter((d) => existsSync(join(goldenDir, d, 'libvmaf.json'))).sort() : [];

for (const backend of backendsUnderTest()) {
  describe(`golden parity (${backend} backend)`, function () {
    const totals = { compared: 0, exact: 0 };
    after(() => console.log(`      ${backend}: ${totals.exact} of ${totals.compared} values exactly equal to libvmaf`));

    it('has the golden clips', () => assert.ok(clips.length >= 11, `expected the 11 golden clips in ${goldenDir}`));

    for (const clip of clips) {
      it(clip, async function () {
        const dir = join(goldenDir, clip);
        const golden = JSON.parse(readFileSync(join(dir, 'libvmaf.json'), 'utf8'));
        const ref = readdirSync(dir).find((f) => f.startsWith('ref.'));
        const dis = readdirSync(dir).find((f) => f.startsWith('dis.'));
        const results = await lastValueFrom(score(join(dir, ref), join(dir, dis), { backend, models: MODELS, threads: 2 }).pipe(toArray()));
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
