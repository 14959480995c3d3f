// Golden parity for one extractor run alone: every frame of every golden clip whose
// libvmaf-extra log has the extractor's keys, compared exactly (libvmaf logs a non-finite
// value as null, so null matches a non-finite value). The clips are the carried ones, and
// those of ../shared/golden it does not carry where that folder exists (golden.mjs).
import assert from 'node:assert/strict';
import { lastValueFrom, toArray } from 'rxjs';
import { score } from '../../dist/index.js';
import { goldenClips } from './golden.mjs';

const clipsByName = () => new Map(goldenClips({ shared: true }).map((clip) => [clip.name, clip]));

/** A golden clip by name: a carried one, else one of ../shared/golden's. */
export function goldenClipNamed(name) {
  const clip = clipsByName().get(name);
  if (!clip) throw new Error(`no golden clip ${name}`);
  return clip;
}

/** The names of the golden clips whose libvmaf-extra log carries every one of `keys`. */
export function goldenClipsWith(keys) {
  return [...clipsByName().values()]
    .filter((clip) => clip.hasLog('libvmaf-extra'))
    .filter((clip) => {
      const frame = clip.log('libvmaf-extra').frames?.[0]?.metrics ?? {};
      return keys.every((k) => k in frame);
    })
    .map((clip) => clip.name);
}

/** [ref, dis] paths of a golden clip. */
export function goldenPair(name) {
  const clip = goldenClipNamed(name);
  return [clip.ref, clip.dis];
}

export const sameAsLibvmaf = (actual, expected) => actual === expected || (expected === null && !Number.isFinite(actual));

/**
 * Scores `clip` with `--feature feature` alone on the cpu backend and asserts every frame's
 * `keys` equal libvmaf's; returns { compared } for the report.
 */
export async function assertGoldenParity(clip, feature, keys) {
  const golden = goldenClipNamed(clip).log('libvmaf-extra');
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
