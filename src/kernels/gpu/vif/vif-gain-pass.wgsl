// #include "vif-gain.wgsl"
//
// vif-gain-pass.wgsl: the log-domain numerators (stats 0 and 1 of every scale). One
// workgroup per tile of any scale (tile = wg.y * groups_x + wg.x, scales one after the
// other); it takes the (sigma1_sq, sigma2_sq, sigma12) triples that vif-stats.wgsl queued
// in the tile's region, computes for each (vif-gain.wgsl)
//   log2q(p(100) + base) - log2q(base)   and   log2q(p(1) + base) - log2q(base)
// and writes the two workgroup sums (fixed tree) as the tile's partials of stats 0 and 1.
// Each entry goes through vif_gain_terms_fast; the few it cannot decide are listed in
// workgroup memory and then shared out over the whole workgroup for the software binary64
// (vif_gain_terms_exact), so that slow path runs with all lanes busy.
//
// Kept apart from the filtering so that the binary64 code (large, many registers) is
// compiled once for all scales and bit depths and does not limit the occupancy of the
// filtering passes.

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

// Entries the fast path left undecided (indices into the queue); beyond SLOW_MAX (possible
// only with tiles of more than 512 pixels) they are done on the spot.
const SLOW_MAX: u32 = 512u;

var<workgroup> red_num: array<u32, GAIN_WG>;
var<workgroup> red_egl: array<u32, GAIN_WG>;
var<workgroup> slow: array<u32, SLOW_MAX>;
var<workgroup> slow_count: atomic<u32>;

@compute @workgroup_size(GAIN_WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let tile = wg.y * G.groups_x + wg.x;
  if (tile >= G.total_tiles) {
    return; // the whole workgroup: tile is uniform
  }
  if (lid == 0u) {
    atomicStore(&slow_count, 0u);
  }
  workgroupBarrier();
  let n = gain_count[tile];
  let region = tile * G.queue_stride;
  // Per tile: at most 2^14 entries (vif-kernel.ts) of < 2^17 each: u32 sums are exact, and
  // the order of the terms does not matter.
  var num = 0u;
  var egl = 0u;
  for (var q = lid; q < n; q = q + GAIN_WG) {
    let e = region + 3u * q;
    let s1 = bitcast<i32>(gain_queue[e]);
    let s2 = bitcast<i32>(gain_queue[e + 1u]);
    let s12 = bitcast<i32>(gain_queue[e + 2u]);
    let f = vif_gain_terms_fast(s1, s2, s12);
    if (f.z != 0u) {
      num = num + f.x;
      egl = egl + f.y;
    } else {
      let at = atomicAdd(&slow_count, 1u);
      if (at < SLOW_MAX) {
        slow[at] = e;
      } else {
        let t = vif_gain_terms_exact(s1, s2, s12);
        num = num + t.x;
        egl = egl + t.y;
      }
    }
  }
  workgroupBarrier();
  let ns = min(atomicLoad(&slow_count), SLOW_MAX);
  for (var i = lid; i < ns; i = i + GAIN_WG) {
    let e = slow[i];
    let t = vif_gain_terms_exact(bitcast<i32>(gain_queue[e]), bitcast<i32>(gain_queue[e + 1u]),
                                 bitcast<i32>(gain_queue[e + 2u]));
    num = num + t.x;
    egl = egl + t.y;
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
