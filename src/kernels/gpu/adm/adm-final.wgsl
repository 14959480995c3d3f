// #include "../lib/i64.wgsl"
// #include "adm-variants.wgsl"
//
// ADM pass 3: the 60 stats of adm.h's layout. Workgroup k < 36 (scale k / 9) or k >= 36
// (scale (k - 36) / 6) adds the shifted row values (adm-mask.wgsl) of stat k's row stat
// (adm_row_stat) in a fixed order (invocation i: rows i, i + FIN_WG, ...; then a fixed tree)
// and writes the int64 as (lo, hi) words at out[out_word + 2 k].
// A scale with no rows (frames below the minimum size) gives 0, and so does a stat whose bit
// in keep is clear (stat k: bit k % 32 of keep[k / 32]): the slots an instance at options
// leaves 0 (adm.h: its second variant, AIM under adm_skip_aim, scale 0 under
// adm_skip_scale0), which the passes before compute anyway, and those of variant 1 where
// it is not computed.

const FIN_WG: u32 = 64u;

struct FinalParams {
  rows: vec4<u32>,  // scored rows per scale
  base: vec4<u32>,  // rowvals index of each scale's stat 0, row 0
  out: vec4<u32>,   // word offset of stat 0 in out
  keep: vec4<u32>,  // which stats are written as computed (the others as 0): bits 0..59
}

@group(0) @binding(0) var<storage, read> rowvals: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> P: FinalParams;

var<workgroup> red: array<vec2<u32>, FIN_WG>;

@compute @workgroup_size(FIN_WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let k = wg.x;
  var s = k / 9u;
  if (k >= 36u) {
    s = (k - 36u) / 6u;
  }
  let j = adm_row_stat(k);
  var rows = P.rows[s];
  if (j == ADM_ROW_STATS) {
    rows = 0u; // not computed: written as 0
  }
  let base = P.base[s] + j * rows;
  var acc = vec2<u32>(0u, 0u);
  for (var r = lid; r < rows; r += FIN_WG) {
    acc = i64_add(acc, rowvals[base + r]);
  }
  red[lid] = acc;
  workgroupBarrier();
  for (var st = FIN_WG / 2u; st > 0u; st = st >> 1u) {
    if (lid < st) {
      red[lid] = i64_add(red[lid], red[lid + st]);
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    var total = red[0];
    if (((P.keep[k / 32u] >> (k % 32u)) & 1u) == 0u) {
      total = vec2<u32>(0u, 0u);
    }
    out[P.out.x + 2u * k] = total.x;
    out[P.out.x + 2u * k + 1u] = total.y;
  }
}
