// #include "lib/f32.wgsl"
//
// f32-probe.ts's check of this adapter's native float arithmetic: for each case (a, b, c),
// a mask of the native paths of lib/f32.wgsl that differ from its integer-only path.

@group(0) @binding(0) var<storage, read> cases: array<u32>;
@group(0) @binding(1) var<storage, read_write> masks: array<u32>;
@group(0) @binding(2) var<uniform> params: vec4<u32>; // x: the cases

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.x);
  let i = id.x;
  if (i >= params.x) {
    return;
  }
  let a = cases[3u * i];
  let b = cases[3u * i + 1u];
  let c = cases[3u * i + 2u];
  let p = f32_mul_exact(a, b);
  let c_minus_p = f32_from_f64(f64_sub(f64_from_f32_bits(c), f64_from_f32_bits(p)));
  let b_minus_c = f32_from_f64(f64_sub(f64_from_f32_bits(b), f64_from_f32_bits(c)));
  var m = 0u;
  m = m | select(0u, 1u, f32_mul(a, b) != p);
  m = m | select(0u, 2u, f32_add(b, c) != f32_add_exact(b, c));
  m = m | select(0u, 4u, f32_sub(b, c) != b_minus_c);
  // Products feeding sums: what a contraction into an FMA would change.
  m = m | select(0u, 8u, f32_add(f32_mul(a, b), c) != f32_add_exact(p, c));
  m = m | select(0u, 16u, f32_sub(c, f32_mul(a, b)) != c_minus_p);
  m = m | select(0u, 32u, f32_div(a, b) != f32_div_exact(a, b));
  m = m | select(0u, 64u, f32_div(c, a) != f32_div_exact(c, a));
  masks[i] = m;
}
