// Every instruction-set copy of the cpu kernels (scalar, baseline SSE2, AVX2, AVX-512, AVX-512
// with VNNI, as far as this CPU has them) gives the same VIF/ADM stats and motion SAD, bit for bit, on
// random and structured frames of every bit depth and of odd sizes; and so do the float
// extractors with SIMD copies (float_vif, float_motion), every output, at several options.
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';
import { EXTRACTORS } from '../dist/extractors/registry.js';
import { assertSameAsScalar, atEveryLevel, isaLevels, random } from './helpers/isa-levels.mjs';

/** A reference, a distorted and a previous frame; `kind` picks noise or smooth content. */
function frames(width, height, bitDepth, kind, seed) {
  const next = random(seed);
  const max = (1 << bitDepth) - 1;
  const Samples = bitDepth === 8 ? Uint8Array : Uint16Array;
  const ref = new Samples(width * height);
  const dis = new Samples(width * height);
  const prev = new Samples(width * height);
  const clamp = (v) => Math.min(max, Math.max(0, v));
  for (let i = 0; i < ref.length; i++) {
    const x = i % width;
    const y = Math.floor(i / width);
    const base = kind === 'noise' ? next() % (max + 1) : Math.round(((Math.sin(x / 7) + Math.cos(y / 5) + 2) / 4) * max);
    const step = Math.max(1, max >> 6);
    ref[i] = base;
    dis[i] = clamp(base + ((next() % 9) - 4) * step - (kind === 'smooth' && x % 11 === 0 ? 8 * step : 0));
    prev[i] = clamp(base + ((next() % 5) - 2) * step);
  }
  return { ref, dis, prev };
}

describe('cpu kernels: every instruction set gives the same results', function () {
  const native = loadNative();
  const levels = isaLevels(native);

  for (const bitDepth of [8, 10, 12, 16]) {
    for (const [width, height] of [
      [64, 48],
      [97, 61],
      [333, 177],
    ]) {
      for (const kind of ['noise', 'smooth']) {
        it(`${width}x${height}, ${bitDepth}-bit, ${kind}`, async function () {
          const { ref, dis, prev } = frames(width, height, bitDepth, kind, width * 131 + bitDepth * 7 + kind.length);
          const results = await atEveryLevel(native, levels, async () => {
            const r = await native.computeFrameStats(ref, dis, width, height, bitDepth, prev);
            return { stats: [...r.stats], sad: r.sad };
          });
          assert.ok(results[0].value.stats.some((v) => v !== 0n), 'the frames give non-zero stats');
          assertSameAsScalar(results, 'stats and SAD');
        });
      }
    }
  }
});

/** Planes of `kind` content: noise, smooth, or flat blocks (equal in ref and dis where flat). */
function floatFrames(width, height, bitDepth, kind, seed) {
  if (kind !== 'flat') return frames(width, height, bitDepth, kind, seed);
  const next = random(seed);
  const max = (1 << bitDepth) - 1;
  const Samples = bitDepth === 8 ? Uint8Array : Uint16Array;
  const ref = new Samples(width * height);
  const dis = new Samples(width * height);
  const prev = new Samples(width * height);
  for (let i = 0; i < ref.length; i++) {
    const x = i % width;
    const y = Math.floor(i / width);
    const block = ((x >> 4) * 7 + (y >> 4) * 13) % 5;
    ref[i] = Math.round((block / 4) * max);
    dis[i] = block === 2 ? next() % (max + 1) : ref[i];
    prev[i] = block === 3 ? max - ref[i] : ref[i];
  }
  return { ref, dis, prev };
}

describe('cpu float extractors: every instruction set gives the same values', function () {
  const native = loadNative();
  const levels = isaLevels(native);
  const byName = Object.fromEntries(EXTRACTORS.map((x) => [x.name, x]));
  const optionsOf = (name, given) => Object.fromEntries(byName[name].options.map((o) => [o.name, given[o.name] ?? o.default]));
  const CASES = [
    ['float_vif', { debug: true }],
    ['float_vif', { debug: true, vif_kernelscale: 0.5, vif_sigma_nsq: 1.7, vif_enhn_gain_limit: 1.2 }],
    ['float_vif', { debug: true, vif_skip_scale0: true, vif_kernelscale: 1.5, vif_prescale: 1.5, vif_prescale_method: 'bicubic', vif_sigma_nsq: 0.25 }],
    ['float_motion', { debug: true }],
    ['float_motion', { debug: true, motion_add_scale1: true, motion_add_uv: true, motion_filter_size: 3 }],
  ];

  for (const bitDepth of [8, 10, 12]) {
    for (const [width, height] of [
      [65, 37],
      [97, 61],
      [333, 177],
    ]) {
      for (const kind of ['noise', 'smooth', 'flat']) {
        it(`${width}x${height}, ${bitDepth}-bit, ${kind}`, async function () {
          const cw = Math.ceil(width / 2);
          const ch = Math.ceil(height / 2);
          const seed = width * 31 + bitDepth * 5 + kind.length;
          const y = floatFrames(width, height, bitDepth, kind, seed);
          const u = floatFrames(cw, ch, bitDepth, kind, seed + 1);
          const v = floatFrames(cw, ch, bitDepth, kind, seed + 2);
          const picture = (key) => [y[key], u[key], v[key]];
          const geometry = { width, height, bitDepth, chromaWidth: cw, chromaHeight: ch };
          for (const [name, given] of CASES) {
            const results = await atEveryLevel(native, levels, async () => {
              const h = native.createExtractor(byName[name].implementation.native, optionsOf(name, given), geometry);
              const previous = name === 'float_motion' ? [picture('prev')] : [];
              return [...(await native.runExtractor(h, picture('ref'), picture('dis'), previous, previous))];
            });
            const scalar = results[0].value;
            const what = `${name} ${JSON.stringify(given)}`;
            assert.ok(scalar.length > 0 && scalar.every((x) => Number.isFinite(x)), `${what}: finite values ${scalar}`);
            assert.ok(scalar.some((x) => x !== 0), `${what}: non-zero values`);
            assertSameAsScalar(results, what);
          }
        });
      }
    }
  }
});
