// The float extractors' instruction-set copies (float_adm, float_ssim, float_ms_ssim: scalar,
// baseline SSE2, AVX2, AVX-512, as far as this CPU has them) give the same values, bit for
// bit, on random and structured frames of 8, 10 and 12 bits, of odd sizes, and with
// options that change their arithmetic (p-norm, bypassed masking, skipped scale 0, a small
// enhancement gain limit, scale and dB options). The copies' equality to libvmaf itself is
// the golden tests' (float_adm via gpu-float-adm and float-vif-adm-motion-ansnr, SSIM via
// extractors/float-ssim), which run at the detected level.
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';
import { resolveOptions } from '../dist/extractors/option.js';
import { floatAdm } from '../dist/extractors/float_adm/float_adm.js';
import { floatSsim } from '../dist/extractors/float_ssim/float_ssim.js';
import { floatMsSsim } from '../dist/extractors/float_ms_ssim/float_ms_ssim.js';
import { assertSameAsScalar, atEveryLevel, isaLevels, random } from './helpers/isa-levels.mjs';

/** Luma of a reference and a distorted frame: noise, smooth waves, or flat with steps and extremes. */
function frames(width, height, bitDepth, kind, seed) {
  const next = random(seed);
  const max = (1 << bitDepth) - 1;
  const Samples = bitDepth === 8 ? Uint8Array : Uint16Array;
  const ref = new Samples(width * height);
  const dis = new Samples(width * height);
  const clamp = (v) => Math.min(max, Math.max(0, v));
  const step = Math.max(1, max >> 6);
  for (let i = 0; i < ref.length; i++) {
    const x = i % width;
    const y = Math.floor(i / width);
    let base;
    if (kind === 'noise') base = next() % (max + 1);
    else if (kind === 'smooth') base = Math.round(((Math.sin(x / 7) + Math.cos(y / 5) + 2) / 4) * max);
    else base = x < width / 3 ? 0 : x < (2 * width) / 3 ? max : (y >> 3) % 2 === 0 ? max >> 1 : (max >> 1) + step;
    ref[i] = base;
    // Flat content keeps most pixels equal (zero bands, gains at their clip and angle limits).
    const noise = kind === 'flat' ? (next() % 7 === 0 ? ((next() % 9) - 4) * step : 0) : ((next() % 9) - 4) * step;
    dis[i] = clamp(base + noise - (kind === 'smooth' && x % 11 === 0 ? 8 * step : 0));
  }
  return { ref, dis };
}

const defaults = (def, given = {}) =>
  resolveOptions(def.name, def.options, new Map(Object.entries(given)), 'test');

const CASES = [
  { def: floatAdm, given: {} },
  { def: floatAdm, given: { adm_enhn_gain_limit: '1.2', debug: 'true' } },
  { def: floatAdm, given: { adm_bypass_cm: '1', adm_skip_scale0: 'true' } },
  { def: floatAdm, given: { adm_p_norm: '2.5', adm_csf_mode: '2' } },
  { def: floatSsim, given: { enable_lcs: 'true' } },
  { def: floatSsim, given: { scale: '2', enable_db: 'true' } },
  { def: floatMsSsim, given: { enable_lcs: 'true' }, min: 176 },
];

describe('float extractors: every instruction set gives the same values', function () {
  const native = loadNative();
  const levels = isaLevels(native);

  for (const { def, given, min = 0 } of CASES) {
    const label = `${def.name}${Object.keys(given).length ? ' ' + Object.entries(given).map(([k, v]) => `${k}=${v}`).join(':') : ''}`;
    for (const bitDepth of [8, 10, 12]) {
      for (const [width, height] of [
        [41, 37],
        [97, 61],
        [193, 179],
        [64, 48],
      ]) {
        if (width < min || height < min) continue;
        for (const kind of ['noise', 'smooth', 'flat']) {
          it(`${label}: ${width}x${height}, ${bitDepth}-bit, ${kind}`, async function () {
            const { ref, dis } = frames(width, height, bitDepth, kind, width * 131 + bitDepth * 7 + kind.length);
            const options = { ...defaults(def, given) };
            const geometry = { width, height, bitDepth, chromaWidth: 0, chromaHeight: 0 };
            const h = native.createExtractor(def.name, options, geometry);
            const results = await atEveryLevel(native, levels, async () => [
              ...(await native.runExtractor(h, [ref], [dis], [], [])),
            ]);
            assert.ok(results[0].value.every((v) => Number.isFinite(v)), `finite values: ${results[0].value}`);
            assertSameAsScalar(results, label);
          });
        }
      }
    }
  }
});
