// Where the tests find shared data, and which backends they exercise.
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** ../shared/golden beside the checkout (CI has it); VMAF_GOLDEN overrides. */
export const goldenDir = process.env.VMAF_GOLDEN ?? resolve(root, '../shared/golden');
export const modelsDir = process.env.VMAF_MODELS ?? resolve(root, '../shared/models');

/** The cpu backend always; the gpu backend where a WebGPU adapter exists (lavapipe in CI). VMAF_BACKENDS=cpu,gpu overrides. */
export function backendsUnderTest() {
  if (process.env.VMAF_BACKENDS) return process.env.VMAF_BACKENDS.split(',');
  return ['cpu'];
}
