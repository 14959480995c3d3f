// Every registered extractor on frames from its minimum size to minimum + 40, in width and
// in height, odd and even, 8/10/12-bit, 4:2:0/4:2:2/4:4:4 (a sample here, rotating formats
// and depths; the full sweep: npm run fuzz -- --sweep): values on the cpu backend, the same
// values on the gpu backend, and a clear E_FRAME_TOO_SMALL just below the minimum
// (helpers/size-sweep.mjs).
import assert from 'node:assert/strict';
import { backendsUnderTest } from './helpers/env.mjs';
import { EXTRACTOR_NAMES, minimumSide, runSweepCase, sweepCases } from './helpers/size-sweep.mjs';

describe('size sweep', function () {
  it('finds each extractor\'s minimum: 33 (the integer kernels\' floor), more where libvmaf refuses more (MS-SSIM, SpEED, CAMBI)', async () => {
    const larger = { float_ms_ssim: 176, speed_chroma: 80, speed_temporal: 80, cambi: 216 };
    for (const name of EXTRACTOR_NAMES) {
      const min = await minimumSide(name);
      assert.equal(min, larger[name] ?? 33, name);
    }
  });

  for (const backend of backendsUnderTest()) {
    it(`every extractor from its minimum to minimum + 40 (sampled): ${backend === 'cpu' ? 'values, refusals only below the minimum' : 'the cpu backend\'s values exactly'} (${backend})`, async function () {
      // The gpu backend on lavapipe is slow (~3 s a case): it sees the edges of each range,
      // the minimum, minimum + 1 wide, minimum + 40 high, and one size below.
      const all = await sweepCases();
      const min = new Map(all.filter((c) => !c.belowMinimum).map((c) => [c.name, Math.min(c.width, c.height)]));
      const edge = (c) => {
        const m = min.get(c.name);
        return [`${m}x${m}`, `${m + 1}x${m}`, `${m}x${m + 40}`, `${m - 1}x${m}`].includes(`${c.width}x${c.height}`);
      };
      const cases = all.filter((c) => backend === 'cpu' || edge(c));
      const failures = [];
      for (const c of cases) {
        const failure = await runSweepCase(c, { backends: backend === 'cpu' ? ['cpu'] : ['cpu', backend] });
        if (failure) failures.push(failure);
      }
      assert.ok(cases.length >= EXTRACTOR_NAMES.length * 4, `${cases.length} cases`);
      assert.deepEqual(failures, []);
    });
  }
});
