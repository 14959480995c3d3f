// cambi's instruction-set copies (portable, AVX2, AVX-512 with its gathered c values and
// masked histogram updates) give the same values, bit for bit, on banded, noisy and flat
// content of 8 and 10 bits, at widths that leave tails past the 16- and 32-column steps, at
// several options (full_ref, wider contrast ranges up to max_log_contrast 5, small windows).
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';
import { EXTRACTORS } from '../dist/extractors/registry.js';
import { assertSameAsScalar, atEveryLevel, isaLevels, random } from './helpers/isa-levels.mjs';

/** Luma with banded gradients (steps of one code value), a noisy band and a flat block. */
function banded(width, height, bitDepth, seed, shift) {
  const next = random(seed);
  const max = (1 << bitDepth) - 1;
  const Samples = bitDepth === 8 ? Uint8Array : Uint16Array;
  const y = new Samples(width * height);
  for (let i = 0; i < y.length; i++) {
    const x = i % width;
    const r = Math.floor(i / width);
    let v;
    if (r < height / 3) v = Math.floor(((x + shift) / width) * (max >> 3)) + (max >> 2);  // shallow ramp: bands
    else if (r < (2 * height) / 3) v = (max >> 1) + (next() % 7) - 3;  // noise
    else v = x < width / 2 ? (max >> 2) + ((x >> 5) & 1) : Math.floor((r / height) * max);  // flat blocks, vertical ramp
    y[i] = Math.min(max, Math.max(0, v));
  }
  return y;
}

describe('cambi: every instruction set gives the same values', function () {
  const native = loadNative();
  const levels = isaLevels(native);
  const cambi = EXTRACTORS.find((x) => x.name === 'cambi');
  const optionsOf = (given) => Object.fromEntries(cambi.options.map((o) => [o.name, given[o.name] ?? o.default]));
  const CASES = [{}, { full_ref: true }, { max_log_contrast: 5, window_size: 127 }, { window_size: 31 }, { max_log_contrast: 3, tvi_threshold: 0.05, topk: 0.1 }];

  for (const bitDepth of [8, 10]) {
    for (const [width, height] of [
      [320, 240],
      [333, 227],
    ]) {
      it(`${width}x${height}, ${bitDepth}-bit`, async function () {
        const cw = Math.ceil(width / 2);
        const ch = Math.ceil(height / 2);
        const chroma = () => new (bitDepth === 8 ? Uint8Array : Uint16Array)(cw * ch);
        const ref = [banded(width, height, bitDepth, width + bitDepth, 0), chroma(), chroma()];
        const dis = [banded(width, height, bitDepth, width + bitDepth + 1, 3), chroma(), chroma()];
        const geometry = { width, height, bitDepth, chromaWidth: cw, chromaHeight: ch };
        for (const given of CASES) {
          const results = await atEveryLevel(native, levels, async () => {
            const h = native.createExtractor(cambi.implementation.native, optionsOf(given), geometry);
            return [...(await native.runExtractor(h, ref, dis, [], []))];
          });
          const scalar = results[0].value;
          const what = `cambi ${JSON.stringify(given)}`;
          assert.ok(scalar.length > 0 && scalar.every((x) => Number.isFinite(x)), `${what}: finite values ${scalar}`);
          assert.ok(scalar.some((x) => x !== 0), `${what}: non-zero values ${scalar}`);
          assertSameAsScalar(results, what);
        }
      });
    }
  }

  it('refuses a sample beyond the bit depth wherever it lies, at every ISA', async function () {
    const [width, height, cw, ch] = [333, 227, 167, 114];
    const geometry = { width, height, bitDepth: 10, chromaWidth: cw, chromaHeight: ch };
    for (const at of [0, 16 * width + 200, width * height - 1]) {
      const ref = [banded(width, height, 10, 7, 0), new Uint16Array(cw * ch), new Uint16Array(cw * ch)];
      const dis = [banded(width, height, 10, 8, 3), new Uint16Array(cw * ch), new Uint16Array(cw * ch)];
      dis[0][at] = 1024;
      const results = await atEveryLevel(native, levels, async () => {
        const h = native.createExtractor(cambi.implementation.native, optionsOf({}), geometry);
        return native.runExtractor(h, ref, dis, [], []).then(() => 'accepted', (e) => String(e.message));
      });
      for (const r of results) assert.match(r.value, /greater than 1023/, `${r.level}, sample ${at}`);
    }
  });
});
