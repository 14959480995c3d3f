// Every registered extractor on frames from its minimum size to minimum + 40, in width and
// in height, odd and even, 8/10/12-bit, 4:2:0/4:2:2/4:4:4 (a sample here, rotating formats
// and depths; the full sweep: npm run fuzz -- --sweep): values on the cpu backend, the same
// values on the gpu backend, and a clear E_FRAME_TOO_SMALL just below the minimum
// (helpers/size-sweep.mjs).
import assert from 'node:assert/strict';
import { backendsUnderTest } from './helpers/env.mjs';
import { createRng } from './helpers/fuzz-cases.mjs';
import { EXTRACTOR_NAMES, minimumSide, runSweepCase, sweepCases } from './helpers/size-sweep.mjs';

// VMAF_SWEEP_FRACTION=F (0 < F <= 1), VMAF_SWEEP_SEED=S (default 1): the cpu sweep also runs a
// seeded F of the full sweep (every size, format and depth) of each extractor. CI's sanitizer
// pass sets it (.ci/run), so every extractor's native code meets many geometries under ASan
// and UBSan within its time; F = 1 is the whole sweep.
const fraction = process.env.VMAF_SWEEP_FRACTION === undefined ? 0 : Number(process.env.VMAF_SWEEP_FRACTION);
if (!(fraction >= 0 && fraction <= 1)) throw new Error(`VMAF_SWEEP_FRACTION must be a number from 0 to 1, not ${process.env.VMAF_SWEEP_FRACTION}`);
const seed = Number(process.env.VMAF_SWEEP_SEED ?? 1);

/** A seeded `fraction` of each extractor's full sweep (at least one case each), in sweep order. */
async function seededSubset() {
  if (fraction === 0) return [];
  const full = await sweepCases({ full: true });
  const picked = [];
  for (const name of EXTRACTOR_NAMES) {
    const rng = createRng(seed * 7919 + EXTRACTOR_NAMES.indexOf(name));
    const own = full.filter((c) => c.name === name);
    const want = Math.max(1, Math.round(own.length * fraction));
    // A partial Fisher-Yates shuffle: the first `want` are the sample.
    for (let i = 0; i < want; i++) {
      const j = i + Math.floor(rng.next() * (own.length - i));
      [own[i], own[j]] = [own[j], own[i]];
    }
    picked.push(...own.slice(0, want));
  }
  return picked;
}

describe('size sweep', function () {
  it('finds each extractor\'s minimum: 33 (the integer kernels\' floor), more where libvmaf refuses more (MS-SSIM, SpEED, CAMBI)', async () => {
    const larger = { float_ms_ssim: 176, speed_chroma: 80, speed_temporal: 80, cambi: 216 };
    for (const name of EXTRACTOR_NAMES) {
      const min = await minimumSide(name);
      assert.equal(min, larger[name] ?? 33, name);
    }
  });

  for (const backend of backendsUnderTest()) {
    const extra = backend === 'cpu' && fraction > 0 ? `, and a seeded ${fraction} of the full sweep (seed ${seed})` : '';
    it(`every extractor from its minimum to minimum + 40 (sampled${extra}): ${backend === 'cpu' ? 'values, refusals only below the minimum' : 'the cpu backend\'s values exactly'} (${backend})`, async function () {
      // The gpu backend on lavapipe is slow (~3 s a case): it sees the edges of each range,
      // the minimum, minimum + 1 wide, minimum + 40 high, and one size below.
      const all = await sweepCases();
      const min = new Map(all.filter((c) => !c.belowMinimum).map((c) => [c.name, Math.min(c.width, c.height)]));
      const edge = (c) => {
        const m = min.get(c.name);
        return [`${m}x${m}`, `${m + 1}x${m}`, `${m}x${m + 40}`, `${m - 1}x${m}`].includes(`${c.width}x${c.height}`);
      };
      const cases = all.filter((c) => backend === 'cpu' || edge(c));
      const sampled = cases.length;
      if (backend === 'cpu') cases.push(...(await seededSubset()));
      const failures = [];
      for (const c of cases) {
        const failure = await runSweepCase(c, { backends: backend === 'cpu' ? ['cpu'] : ['cpu', backend] });
        if (failure) failures.push(failure);
      }
      console.log(`        ${cases.length} cases (${cases.length - sampled} of them seeded from the full sweep)`);
      assert.ok(sampled >= EXTRACTOR_NAMES.length * 4, `${sampled} cases`);
      if (backend === 'cpu' && fraction > 0) assert.ok(cases.length - sampled >= EXTRACTOR_NAMES.length, `${cases.length - sampled} seeded cases`);
      assert.deepEqual(failures, []);
    });
  }
});
