// Every instruction-set copy of the cpu kernels (scalar, baseline SSE2, AVX2, AVX-512, AVX-512
// with VNNI, as far as this CPU has them) gives the same VIF/ADM stats and motion SAD, bit for bit, on
// random and structured frames of every bit depth and of odd sizes.
import assert from 'node:assert/strict';
import { loadNative } from '../dist/kernels/native.js';

const LEVELS = ['scalar', 'baseline', 'avx2', 'avx512', 'avx512vnni'];

/** xorshift32: the same frames on every run. */
function random(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

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
  const { detected } = native.limitIsa();
  const levels = LEVELS.slice(0, LEVELS.indexOf(detected) + 1);
  after(() => native.limitIsa());

  it(`has more than one copy to compare on this CPU (${levels.join(', ')})`, function () {
    assert.ok(levels.length >= 2);
  });

  for (const bitDepth of [8, 10, 12, 16]) {
    for (const [width, height] of [
      [64, 48],
      [97, 61],
      [333, 177],
    ]) {
      for (const kind of ['noise', 'smooth']) {
        it(`${width}x${height}, ${bitDepth}-bit, ${kind}`, async function () {
          const { ref, dis, prev } = frames(width, height, bitDepth, kind, width * 131 + bitDepth * 7 + kind.length);
          const results = [];
          for (const level of levels) {
            assert.equal(native.limitIsa(level).active, level);
            const r = await native.computeFrameStats(ref, dis, width, height, bitDepth, prev);
            results.push({ level, stats: [...r.stats], sad: r.sad });
          }
          native.limitIsa();
          const [scalar, ...rest] = results;
          assert.ok(scalar.stats.some((v) => v !== 0n), 'the frames give non-zero stats');
          for (const r of rest) {
            assert.deepEqual(r.stats, scalar.stats, `${r.level} stats equal the scalar ones`);
            assert.equal(r.sad, scalar.sad, `${r.level} SAD equals the scalar one`);
          }
        });
      }
    }
  }
});
