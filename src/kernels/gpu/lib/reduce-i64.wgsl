// #include "i64.wgsl"
//
// reduce-i64.wgsl (library): a deterministic workgroup sum of i64 values (vec2<u32>, see
// i64.wgsl). The including shader declares the workgroup size, a power of two, as
//
//     const REDUCE_WG_SIZE: u32 = 256u;
//
// and runs workgroup_sum_i64 with @workgroup_size(REDUCE_WG_SIZE) and one-dimensional
// local_invocation_index. The tree is always the same (pairs at distance 128, 64, ... 1),
// and every add carries, so the total is exact modulo 2^64 and identical on every run.

var<workgroup> reduce_i64_scratch: array<vec2<u32>, REDUCE_WG_SIZE>;

// Sum of v over the workgroup; every invocation gets the total (a uniform value).
// Call it from uniform control flow, from every invocation of the workgroup: never return
// early before it; guard the per-invocation work instead and pass zero. It can be called
// several times in a row (one sum after another).
fn workgroup_sum_i64(lid: u32, v: vec2<u32>) -> vec2<u32> {
  reduce_i64_scratch[lid] = v;
  workgroupBarrier();
  for (var s = REDUCE_WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      reduce_i64_scratch[lid] = i64_add(reduce_i64_scratch[lid], reduce_i64_scratch[lid + s]);
    }
    workgroupBarrier();
  }
  let total = workgroupUniformLoad(&reduce_i64_scratch[0]);
  workgroupBarrier(); // everyone has read [0] before a following call overwrites it
  return total;
}
