// The harness of the instruction-set equality tests (cpu-isa, cpu-isa-float): the levels
// this CPU has, a run at each of them through limitIsa, and the check that every copy gives
// the scalar copy's values.
import assert from 'node:assert/strict';

export const LEVELS = ['scalar', 'baseline', 'avx2', 'avx512', 'avx512vnni'];

/** xorshift32: the same frames on every run. */
export function random(seed) {
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

/**
 * The levels up to the detected one, for use inside a describe(): adds the case that there
 * is more than one copy to compare, and restores the detected level after the suite.
 */
export function isaLevels(native) {
  const { detected } = native.limitIsa();
  const levels = LEVELS.slice(0, LEVELS.indexOf(detected) + 1);
  after(() => native.limitIsa());
  it(`has more than one copy to compare on this CPU (${levels.join(', ')})`, function () {
    assert.ok(levels.length >= 2);
  });
  return levels;
}

/** `run()` under each level in turn (then the detected level again): [{ level, value }], scalar first. */
export async function atEveryLevel(native, levels, run) {
  const results = [];
  try {
    for (const level of levels) {
      assert.equal(native.limitIsa(level).active, level);
      results.push({ level, value: await run(level) });
    }
  } finally {
    native.limitIsa();
  }
  return results;
}

/** Every level's value deep-equals the scalar copy's (strict: -0 and 0 differ). */
export function assertSameAsScalar(results, what) {
  const [scalar, ...rest] = results;
  for (const r of rest) assert.deepEqual(r.value, scalar.value, `${what}: ${r.level} equals the scalar copy`);
}
