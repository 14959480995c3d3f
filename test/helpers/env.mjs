// Where the tests find their data, and which backends they exercise.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** The golden clips the repository carries: every test can rely on these. */
export const fixturesGoldenDir = resolve(root, 'test/fixtures/golden');

/**
 * The team's larger golden set (../shared/golden beside the checkout, or VMAF_GOLDEN), or
 * null where there is none: tests may read more from it, never require it. A VMAF_GOLDEN
 * that names no folder (VMAF_GOLDEN=/nonexistent) runs the suite as a fresh clone would.
 */
export const sharedGoldenDir = existingDir(process.env.VMAF_GOLDEN ?? resolve(root, '../shared/golden'));

function existingDir(path) {
  return existsSync(path) ? path : null;
}

/**
 * Both backends: the gpu backend's tests run on any WebGPU adapter, Mesa's lavapipe in CI
 * (scripts/install-lavapipe.sh). VMAF_BACKENDS=cpu (or gpu) narrows a run.
 */
export function backendsUnderTest() {
  return (process.env.VMAF_BACKENDS ?? 'cpu,gpu').split(',');
}

/** Clips longer than this are scored over a prefix on the gpu backend's end-to-end runs (gpuPrefixOf). */
const LONG_CLIP = 100;
/** The prefix compared: many times the depth of every ring and fence of the gpu backend (a few frames each). */
const GPU_PREFIX_FRAMES = 60;
/** Frames scored past it: motion2 and motion3's windows read up to two frames ahead, and a run's last frames have none. */
const LOOKAHEAD = 2;

/**
 * How much of a golden clip of `frames` frames an end-to-end gpu test scores: all of a clip up
 * to 100 frames; of a longer one, 62 frames scored and the first 60 compared, each exactly (the
 * 300-frame ladder clip alone took about 5 minutes of CI's lavapipe through the presets and
 * CAMBI's parity, and its later frames reach no ring slot, fence or state the first 60 do not;
 * the 2 more give the windows that read ahead what a whole run gives them). Those tests score
 * the cpu backend whole. VMAF_TEST_FULL=1 scores every clip whole on both backends.
 * Undefined where the whole clip is scored.
 */
export function gpuPrefixOf(frames) {
  if (/^(1|true|yes)$/i.test(process.env.VMAF_TEST_FULL ?? '') || frames <= LONG_CLIP) return undefined;
  return { scored: GPU_PREFIX_FRAMES + LOOKAHEAD, compared: GPU_PREFIX_FRAMES };
}
