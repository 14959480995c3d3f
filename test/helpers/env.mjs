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
