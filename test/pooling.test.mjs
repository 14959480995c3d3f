// Pooling: PooledStats against libvmaf 3.2.0's pooled_metrics (min, max, mean,
// harmonic_mean) for every metric of every golden clip, bit for bit.
import assert from 'node:assert/strict';
import { PooledStats } from '../dist/pipeline/pooling.js';
import { carriedClipNames, goldenClips } from './helpers/golden.mjs';
import { CARRIED_CLIPS } from './helpers/carried-clips.mjs';

const METHODS = ['min', 'max', 'mean', 'harmonic_mean'];

describe('pooling: golden pooled_metrics (libvmaf 3.2.0)', function () {
  const clips = goldenClips({ shared: true });
  const totals = { compared: 0, exact: 0 };
  after(() => console.log(`      ${totals.exact} of ${totals.compared} pooled values bit-identical to libvmaf`));

  it('has the golden clips the repository carries', () => assert.deepEqual(carriedClipNames, CARRIED_CLIPS));

  for (const clip of clips) {
    it(clip.origin === 'repo' ? clip.name : `${clip.name} (shared)`, () => {
      const golden = clip.log();
      const names = Object.keys(golden.pooled_metrics);
      assert.ok(names.includes('vmaf') && names.includes('integer_adm2'));
      for (const name of names) {
        const stats = new PooledStats();
        for (const frame of golden.frames) stats.add(frame.metrics[name]);
        assert.equal(stats.count, golden.frames.length);
        const result = stats.result();
        for (const method of METHODS) {
          const expected = golden.pooled_metrics[name][method];
          totals.compared++;
          if (Object.is(result[method], expected)) totals.exact++;
          assert.ok(Math.abs(result[method] - expected) <= 1e-9 * Math.max(1, Math.abs(expected)),
            `${name} ${method}: ${result[method]} vs ${expected}`);
          assert.equal(result[method], expected, `${name} ${method}: not bit-identical`);
        }
      }
    });
  }
});

describe('PooledStats', function () {
  it('pools as libvmaf defines it', () => {
    const s = new PooledStats();
    for (const v of [3, 1, 0, 2]) s.add(v);
    assert.equal(s.count, 4);
    const r = s.result();
    assert.equal(r.min, 0);
    assert.equal(r.max, 3);
    assert.equal(r.mean, 1.5);
    // n / sum(1/(v+1)) - 1, summed in order
    assert.equal(r.harmonic_mean, 4 / (1 / 4 + 1 / 2 + 1 / 1 + 1 / 3) - 1);
    assert.ok(r.harmonic_mean < r.mean);
  });

  it('sums in arrival order (not sorted, not compensated)', () => {
    const s = new PooledStats();
    const values = [1e16, 1, -1e16, 1];
    for (const v of values) s.add(v);
    assert.equal(s.result().mean, (((0 + 1e16) + 1) + -1e16 + 1) / 4);
  });

  it('handles one value and none', () => {
    const one = new PooledStats();
    one.add(42.5);
    assert.deepEqual(one.result(), { min: 42.5, max: 42.5, mean: 42.5, harmonic_mean: 42.5 });
    const none = new PooledStats();
    assert.equal(none.count, 0);
    assert.ok(Number.isNaN(none.result().mean));
  });

  it('takes negative values (VMAF with disable_clip)', () => {
    const s = new PooledStats();
    for (const v of [-5, 10]) s.add(v);
    const r = s.result();
    assert.equal(r.min, -5);
    assert.equal(r.max, 10);
    assert.equal(r.mean, 2.5);
    assert.equal(r.harmonic_mean, 2 / (1 / -4 + 1 / 11) - 1);
  });
});
