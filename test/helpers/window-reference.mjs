// The window statistics written out plainly, as an oracle for the windows and alerts tests:
// libvmaf's pooling (sums in frame order, harmonic mean n / Σ 1/(v+1) − 1) and the
// nearest-rank percentile sorted[⌈p·n/100⌉ − 1] (the guard keeps p·n/100 = 1.0000000000000002 at rank 1).
export function windowReference(values, percentiles = [5]) {
  let sum = 0;
  let inverse = 0;
  for (const v of values) {
    sum += v;
    inverse += 1 / (v + 1);
  }
  const sorted = [...values].sort((a, b) => a - b);
  const out = { mean: sum / values.length, min: sorted[0], max: sorted.at(-1), harmonic_mean: values.length / inverse - 1 };
  for (const p of percentiles) out[`p${p}`] = sorted[Math.max(1, Math.ceil((p * values.length) / 100 - 1e-9)) - 1];
  return out;
}
