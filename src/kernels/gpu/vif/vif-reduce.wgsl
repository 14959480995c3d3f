// #include "../lib/reduce-i64.wgsl"
//
// vif-reduce.wgsl: the last VIF pass. Workgroup k (0..19) sums the per-tile partials of
// accumulator k = 5 * scale + stat that vif-stats.wgsl wrote (each invocation a fixed
// strided subset, then the fixed workgroup tree: the same total on every run) and stores it
// as (lo, hi) words at stats[out_word + 2k].

const REDUCE_WG_SIZE: u32 = 256u;

struct VifReduceParams {
  // per scale: index of its partials (stat 0, tile 0) and its tile count
  base: vec4<u32>,
  count: vec4<u32>,
  // word offset of accumulator 0 in the stats buffer
  out_word: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> partials: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> stats: array<u32>;
@group(0) @binding(2) var<uniform> R: VifReduceParams;

@compute @workgroup_size(REDUCE_WG_SIZE)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let k = wg.x;
  let scale = k / 5u;
  let n = R.count[scale];
  let base = R.base[scale] + (k % 5u) * n;
  var acc = vec2<u32>(0u, 0u);
  for (var i = lid; i < n; i = i + REDUCE_WG_SIZE) {
    acc = i64_add(acc, partials[base + i]);
  }
  let total = workgroup_sum_i64(lid, acc);
  if (lid == 0u) {
    stats[R.out_word + 2u * k] = total.x;
    stats[R.out_word + 2u * k + 1u] = total.y;
  }
}
