// #include "lib/reduce-i64.wgsl"
//
// One pass of the i64 sum (driven by reduce-i64.ts): workgroup (x, y) sums elements
// [x * CHUNK, (x + 1) * CHUNK) of segment y (each invocation REDUCE_ITEMS of them, at
// stride REDUCE_WG_SIZE, in a fixed order), then the workgroup tree, and writes the partial
// to dst[out_offset + y * out_stride + x]. Passes repeat over the partials until one value
// per segment is left.

const REDUCE_WG_SIZE: u32 = 256u;
const REDUCE_ITEMS: u32 = 16u;
const CHUNK: u32 = REDUCE_WG_SIZE * REDUCE_ITEMS;

struct Params {
  count: u32,      // elements per segment
  in_offset: u32,  // element index of segment 0 in src
  in_stride: u32,  // elements between segments in src
  out_offset: u32, // element index of segment 0's partials in dst
  out_stride: u32, // elements between segments in dst
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(REDUCE_WG_SIZE)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let seg_base = params.in_offset + wg.y * params.in_stride;
  let base = wg.x * CHUNK;
  var acc = vec2<u32>(0u, 0u);
  for (var k = 0u; k < REDUCE_ITEMS; k = k + 1u) {
    let i = base + k * REDUCE_WG_SIZE + lid;
    if (i < params.count) {
      acc = i64_add(acc, src[seg_base + i]);
    }
  }
  let total = workgroup_sum_i64(lid, acc);
  if (lid == 0u) {
    dst[params.out_offset + wg.y * params.out_stride + wg.x] = total;
  }
}
