// Golden parity for one extractor run alone: every frame of every golden clip whose
// libvmaf-extra.json has the extractor's keys, compared exactly (libvmaf logs a non-finite
// value as null, so null matches a non-finite value).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { goldenDir } from './env.mjs';

/** The golden clips whose libvmaf-extra.json carries every one of `keys`. */
export function goldenClipsWith(keys) {
  if (!existsSync(goldenDir)) return [];
  return readdirSync(goldenDir)
    .filter((d) => existsSync(join(goldenDir, d, 'libvmaf-extra.json')))
    .filter((d) => {
      const frame = JSON.parse(readFileSync(join(goldenDir, d, 'libvmaf-extra.json'), 'utf8')).frames?.[0]?.metrics ?? {};
      return keys.every((k) => k in frame);
    })
    .sort();
}

export function goldenPair(clip) {
  const dir = join(goldenDir, clip);
  const ref = readdirSync(dir).find((f) => f.startsWith('ref.'));
  const dis = readdirSync(dir).find((f) => f.startsWith('dis.'));
  return [join(dir, ref), join(dir, dis)];
}

export const sameAsLibvmaf = (actual, expected) => actual === expected || (expected === null && !Number.isFinite(actual));

/**
 * Scores `clip` with `--feature feature` alone on the cpu backend and asserts every frame's
 * `keys` equal libvmaf's; returns { compared } for the report.
 */
export async function assertGoldenParity(clip, feature, keys) {
  const golden = JSON.parse(readFileSync(join(goldenDir, clip, 'libvmaf-extra.json'), 'utf8'));
  const [ref, dis] = goldenPair(clip);
  const results = await lastValueFrom(score(ref, dis, { backend: 'cpu', features: [feature], noPrediction: true }).pipe(toArray()));
  assert.equal(results.length, golden.frames.length, 'every frame is scored');
  let compared = 0;
  for (const [i, frame] of golden.frames.entries()) {
    assert.deepEqual(Object.keys(results[i].features).filter((k) => keys.includes(k)), keys, `frame ${i}: the keys, in libvmaf's order`);
    for (const key of keys) {
      const actual = results[i].features[key];
      assert.ok(sameAsLibvmaf(actual, frame.metrics[key]), `${clip} frame ${i}: ${key} = ${actual}, libvmaf ${frame.metrics[key]}`);
      compared++;
    }
  }
  return { compared };
}
