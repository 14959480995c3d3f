// Where the tests find shared data, and which backends they exercise.
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** ../shared/golden beside the checkout (CI has it); VMAF_GOLDEN overrides. */
export const goldenDir = process.env.VMAF_GOLDEN ?? resolve(root, '../shared/golden');
export const modelsDir = process.env.VMAF_MODELS ?? resolve(root, '../shared/models');

/**
 * Both backends: the gpu backend's tests run on any WebGPU adapter, Mesa's lavapipe in CI
 * (scripts/install-lavapipe.sh). VMAF_BACKENDS=cpu (or gpu) narrows a run.
 */
export function backendsUnderTest() {
  return (process.env.VMAF_BACKENDS ?? 'cpu,gpu').split(',');
}
