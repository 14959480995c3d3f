/** libvmaf's "float_moment" (float_moment.c): first and second moments of both luma planes. C++: float_moment.cpp. */
import type { ExtractorDefinition } from '../extractor.js';

export const floatMoment: ExtractorDefinition = {
  name: 'float_moment',
  summary: 'luma mean and mean square of each input: float_moment_ref1st, _dis1st, _ref2nd, _dis2nd',
  options: [],
  provides: ['float_moment'],
  planes: () => 'luma',
  neighbours: () => ({ previous: 0, next: 0 }),
  outputs: () => ['float_moment_ref1st', 'float_moment_dis1st', 'float_moment_ref2nd', 'float_moment_dis2nd'],
  implementation: { kind: 'native', native: 'float_moment', gpu: () => import('./float_moment-gpu.js').then((m) => m.floatMomentGpu) },
};
