// #include "vif-gain.wgsl"
// #include "vif-log2.wgsl"
//
// vif-gain-pass.wgsl: the log-domain numerators (stats 0 and 1 of every scale). One
// workgroup per tile of any scale (tile = wg.y * groups_x + wg.x, scales one after the
// other); it takes the (sigma1_sq, sigma2_sq, sigma12) triples that vif-stats.wgsl queued
// in the tile's region, runs each through the binary64 gain path (vif-gain.wgsl), adds
//   log2q(p(100) + base) - log2q(base)   and   log2q(p(1) + base) - log2q(base)
// and writes the two workgroup sums (fixed tree) as the tile's partials of stats 0 and 1.
//
// Kept apart from the filtering so that the software binary64 code (large, many registers)
// is compiled once for all scales and bit depths and does not limit the occupancy of the
// filtering passes; queue entries are spread over all invocations, so the slow path runs
// with every lane busy.

const GAIN_WG: u32 = 256u;

struct VifGainParams {
  // per scale: first tile (among all scales'), first partial, number of tiles
  tile_base: vec4<u32>,
  part_base: vec4<u32>,
  tiles: vec4<u32>,
  total_tiles: u32,
  groups_x: u32,
  // words per tile region of the queue (3 * tile pixels)
  queue_stride: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> gain_queue: array<u32>;
@group(0) @binding(1) var<storage, read> gain_count: array<u32>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> log2_tab: array<u32>;
@group(0) @binding(4) var<uniform> G: VifGainParams;

var<workgroup> red_num: array<u32, GAIN_WG>;
var<workgroup> red_egl: array<u32, GAIN_WG>;

@compute @workgroup_size(GAIN_WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tile = wg.y * G.groups_x + wg.x;
  if (tile >= G.total_tiles) {
    return; // the whole workgroup: tile is uniform
  }
  let n = gain_count[tile];
  let region = tile * G.queue_stride;
  // Per tile: at most 2^14 entries (vif-kernel.ts) of < 2^17 each: u32 sums are exact.
  var num = 0u;
  var egl = 0u;
  for (var q = lid; q < n; q = q + GAIN_WG) {
    let e = region + 3u * q;
    let g = vif_gain_args(bitcast<i32>(gain_queue[e]), bitcast<i32>(gain_queue[e + 1u]),
                          bitcast<i32>(gain_queue[e + 2u]));
    let lb = log2q32(g.base);
    num = num + (log2q64(i64_add_u32(g.p_def, g.base)) - lb);
    egl = egl + (log2q64(i64_add_u32(g.p_egl, g.base)) - lb);
  }
  red_num[lid] = num;
  red_egl[lid] = egl;
  workgroupBarrier();
  for (var s = GAIN_WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      red_num[lid] = red_num[lid] + red_num[lid + s];
      red_egl[lid] = red_egl[lid] + red_egl[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let scale = select(0u, 1u, tile >= G.tile_base.y) + select(0u, 1u, tile >= G.tile_base.z) +
                select(0u, 1u, tile >= G.tile_base.w);
    let t = G.part_base[scale] + tile - G.tile_base[scale];
    partials[t] = vec2<u32>(red_num[0], 0u);
    partials[t + G.tiles[scale]] = vec2<u32>(red_egl[0], 0u);
  }
}
