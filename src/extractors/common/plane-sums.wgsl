// #include "../../kernels/gpu/lib/reduce-i64.wgsl"
//
// Exact integer sums over one plane of a picture, one row per workgroup (driven by
// plane-sums-gpu.ts): MODE 0 sums (a - b)^2 over a plane of two pictures (psnr's SSE),
// MODE 1 the samples of one plane, MODE 2 their squares. Every invocation adds the row's
// samples x = lid, lid + 256, ... into a u64 with carry, then the fixed workgroup tree
// (workgroup_sum_i64) gives the row's total, written to rows[out_index + row]; the rows are
// summed by reduce-i64 (fixed order too). No atomics: the result is the same every run.
// A squared 16-bit difference (< 2^32) still fits the u32 it is added from.

override BIT_DEPTH: u32 = 8u;
override MODE: u32 = 0u;
const REDUCE_WG_SIZE: u32 = 256u;

struct Params {
  a_word: u32,    // first word of the plane in picture a (see gpu/picture-planes.ts)
  b_word: u32,    // ... in picture b (MODE 0)
  width: u32,
  out_index: u32, // where row 0's total goes in rows
}

@group(0) @binding(0) var<storage, read> pic_a: array<u32>;
@group(0) @binding(1) var<storage, read> pic_b: array<u32>;
@group(0) @binding(2) var<storage, read_write> rows: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> params: Params;

fn sample_a(i: u32) -> u32 {
  if (BIT_DEPTH == 8u) {
    return (pic_a[params.a_word + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic_a[params.a_word + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

fn sample_b(i: u32) -> u32 {
  if (BIT_DEPTH == 8u) {
    return (pic_b[params.b_word + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic_b[params.b_word + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

@compute @workgroup_size(REDUCE_WG_SIZE)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wg.x;
  let base = row * params.width;
  var acc = vec2<u32>(0u, 0u);
  for (var x = lid; x < params.width; x = x + REDUCE_WG_SIZE) {
    let a = sample_a(base + x);
    var v: u32;
    if (MODE == 0u) {
      let b = sample_b(base + x);
      let d = select(b - a, a - b, a >= b);
      v = d * d;
    } else if (MODE == 1u) {
      v = a;
    } else {
      v = a * a;
    }
    acc = i64_add_u32(acc, v);
  }
  let total = workgroup_sum_i64(lid, acc);
  if (lid == 0u) {
    rows[params.out_index + row] = total;
  }
}
