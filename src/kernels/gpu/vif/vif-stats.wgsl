// #include "vif-log2.wgsl"
// #include "../lib/luma.wgsl"
//
// vif-stats.wgsl: one VIF scale, one workgroup per TW x TH tile of the scale's image
// (the spec is src/kernels/cpu/vif.h). vif-kernel.ts prepends, per scale and bit depth:
//
//   WG, TW, TH           workgroup size, tile size (TW, TH even; TW * TH = PIX * WG)
//   PIX                  pixels of the tile per invocation
//   HALF                 the half width of the scale's statistics filter
//   HAS_DOWN, DHALF      whether this pass also builds the next scale's image, and the half
//                        width of that (next scale's) filter; DHALF <= HALF
//   WIDE                 whether sample products need more than 16 bits (all but 8-bit
//                        scale 0): then they are filtered as 16-bit halves
//   MU_SHIFT, MU_ROUND   vertical rounding shift of the means (and its half)
//   SQ_SHIFT, SQ_ROUND, SQ_HI_SHIFT   of the second moments (SQ_HI_SHIFT = 16 - SQ_SHIFT)
//   DOWN_SHIFT, DOWN_ROUND            of the down-sampling's vertical pass
//   SMEM                 words of workgroup memory (the largest of the phases below)
//   the bindings, and load_pair(i) -> ref | dis << 16 of sample i of the scale's image,
//   and store_next(i, v) (writes the next scale's image; a no-op at scale 3);
//   the filters, unrolled with their taps as literals (sums over smem around index c):
//     v_filter(c) -> VAcc      the statistics filter down a column of IN (v_centre, v_pair)
//     h_filter(c) -> VAcc      the statistics filter along a row of V (h_centre, h_pair)
//     dv_filter(c) -> vec2     the next scale's filter down a column of IN, ref and dis
//     dh_filter(c) -> vec2     the same along a row of D
//
// Images of scales 1..3 are one u32 per pixel: ref | dis << 16 (both < 2^16), row-major,
// stride = width. Scale 0 reads the luma planes (lib/luma.wgsl).
//
// Phases (workgroup barriers between them; smem is reused from offset 0 from phase 4 on):
//  1. load the tile plus a HALF-pixel mirrored halo on every side into IN (packed pairs);
//  2. vertical filtering: for every halo column of every tile row, the 5 filtered
//     quantities (means packed in one word, then xx, yy, xy) into V; for the even rows,
//     the down-sampling filter of ref and dis (packed) into D;
//  3. horizontal filtering: per pixel mu1, mu2, xx, yy, xy, then sigma1_sq, sigma2_sq,
//     sigma12 (kept in registers); the down-sampled pixels of the tile go to next_img;
//  4. cheap per-pixel contributions (stats 2, 3, 4); the pixels that need the gain
//     (sigma1_sq >= 2^17, sigma12 > 0, sigma2_sq > 0) are written, as (sigma1_sq,
//     sigma2_sq, sigma12) in pixel order (a workgroup prefix scan places them), to the
//     tile's own region of gain_queue (3 * TW * TH words at tile * 3 * TW * TH), their
//     number to gain_count[tile];
//  5. fixed-order workgroup tree of the 3 sums; invocation 0 writes the tile's partials,
//     partials[part_base + k * part_stride + tile] for stat k = 2, 3, 4 (vif.h's order).
// vif-gain-pass.wgsl then computes the gain terms of the queued pixels: stats 0 and 1.
// No invocation returns early: pixels outside the image contribute zero.
//
// All sums are plain u32 arithmetic, exact by the bounds in vif.h: every filter sums to
// 65536, so a filtered value below 2^16 stays below 2^32; the symmetric pair of taps at
// distance k >= 1 is folded as t_k * (x[-k] + x[k]) with t_k < 2^15 and x < 2^16.

struct VifParams {
  // this scale's image
  w: u32,
  h: u32,
  // the next scale's image (w / 2, h / 2)
  nw: u32,
  nh: u32,
  tiles_x: u32,
  // partials of this scale: stat k of tile t at part_base + k * part_stride + t
  part_base: u32,
  part_stride: u32,
  // index of this scale's first tile among all scales' tiles (gain queue regions)
  tile_base: u32,
}

const IN_W: u32 = TW + 2u * HALF;
const IN_H: u32 = TH + 2u * HALF;
const V_OFF: u32 = IN_W * IN_H;
const VP: u32 = IN_W * TH;          // one plane of V
const D_W: u32 = TW + 2u * DHALF;
const D_OFF: u32 = V_OFF + 4u * VP;
const NSQ_I: i32 = 131072;
const VIF_NSQ: u32 = 131072u;

var<workgroup> smem: array<u32, SMEM>;

// Mirror without repeating the edge (valid for -n < i < 2n - 1), then clamp: the clamp only
// matters for the halo of tiles that stick out of the image, whose pixels are not counted.
fn mirror_clamp(i: i32, n: u32) -> u32 {
  let m = i32(n);
  var j = i;
  if (j < 0) {
    j = -j;
  }
  if (j >= m) {
    j = 2 * (m - 1) - j;
  }
  return u32(clamp(j, 0, m - 1));
}

// ---- filter steps (the unrolled filters call them once per tap pair)

// Sums of one filter position. Vertical: m = (sum F a, sum F d), lo / hi = sums of F times
// the low / high 16 bits of (a^2, d^2, a d). Horizontal: m = (sum F vmu1, sum F vmu2),
// lo / hi = sums of F times the low / high 16 bits of (vxx, vyy, vxy).
struct VAcc {
  m: vec2<u32>,
  lo: vec3<u32>,
  hi: vec3<u32>,
}

fn unpack2(p: u32) -> vec2<u32> {
  return vec2<u32>(p & 0xffffu, p >> 16u);
}

fn products(s: vec2<u32>) -> vec3<u32> {
  return vec3<u32>(s.x * s.x, s.y * s.y, s.x * s.y); // < 2^32 each
}

fn v_centre(p: u32, t: u32) -> VAcc {
  let s = unpack2(p);
  let q = products(s);
  var a: VAcc;
  a.m = t * s;
  a.lo = t * (q & vec3<u32>(0xffffu));
  a.hi = vec3<u32>(0u);
  if (WIDE) {
    a.hi = t * (q >> vec3<u32>(16u));
  }
  return a;
}

fn v_pair(a: ptr<function, VAcc>, pu: u32, pd: u32, t: u32) {
  let su = unpack2(pu);
  let sd = unpack2(pd);
  let qu = products(su);
  let qd = products(sd);
  (*a).m = (*a).m + t * (su + sd);
  (*a).lo = (*a).lo + t * ((qu & vec3<u32>(0xffffu)) + (qd & vec3<u32>(0xffffu)));
  if (WIDE) {
    (*a).hi = (*a).hi + t * ((qu >> vec3<u32>(16u)) + (qd >> vec3<u32>(16u)));
  }
}

// The four V planes at index c: (means, vxx, vyy, vxy).
fn h_load(c: u32) -> vec4<u32> {
  return vec4<u32>(smem[c], smem[c + VP], smem[c + 2u * VP], smem[c + 3u * VP]);
}

fn h_centre(v: vec4<u32>, t: u32) -> VAcc {
  var a: VAcc;
  a.m = t * unpack2(v.x);
  a.lo = t * (v.yzw & vec3<u32>(0xffffu));
  a.hi = t * (v.yzw >> vec3<u32>(16u));
  return a;
}

fn h_pair(a: ptr<function, VAcc>, l: vec4<u32>, r: vec4<u32>, t: u32) {
  (*a).m = (*a).m + t * (unpack2(l.x) + unpack2(r.x));
  (*a).lo = (*a).lo + t * ((l.yzw & vec3<u32>(0xffffu)) + (r.yzw & vec3<u32>(0xffffu)));
  (*a).hi = (*a).hi + t * ((l.yzw >> vec3<u32>(16u)) + (r.yzw >> vec3<u32>(16u)));
}

// u32((u64(a) * b + 2^31) >> 32)
fn mul_q32(a: u32, b: u32) -> u32 {
  let p = u64_mul_u32_u32(a, b);
  return p.y + select(0u, 1u, p.x >= 0x80000000u);
}

// A vertically filtered second moment from its filtered 16-bit halves:
// (hi * 2^16 + lo) >>r SQ_SHIFT, modulo 2^32 (SQ_SHIFT <= 16, so hi * 2^16 loses nothing).
fn second_moment(hi: u32, lo: u32) -> u32 {
  if (WIDE) {
    return (hi << SQ_HI_SHIFT) + ((lo + SQ_ROUND) >> SQ_SHIFT);
  }
  return lo;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let w = P.w;
  let h = P.h;
  let x0 = wg.x * TW;
  let y0 = wg.y * TH;

  // ---- 1. the tile and its halo
  for (var i = lid; i < IN_W * IN_H; i = i + WG) {
    let gx = mirror_clamp(i32(x0 + i % IN_W) - i32(HALF), w);
    let gy = mirror_clamp(i32(y0 + i / IN_W) - i32(HALF), h);
    smem[i] = load_pair(gy * w + gx);
  }
  workgroupBarrier();

  // ---- 2. vertical passes
  for (var i = lid; i < VP; i = i + WG) {
    let a = v_filter((i / IN_W + HALF) * IN_W + i % IN_W);
    let mu = (a.m + vec2<u32>(MU_ROUND)) >> vec2<u32>(MU_SHIFT);
    smem[V_OFF + i] = mu.x | (mu.y << 16u);
    smem[V_OFF + VP + i] = second_moment(a.hi.x, a.lo.x);
    smem[V_OFF + 2u * VP + i] = second_moment(a.hi.y, a.lo.y);
    smem[V_OFF + 3u * VP + i] = second_moment(a.hi.z, a.lo.z);
  }
  if (HAS_DOWN) {
    // Even tile rows only (y0 is even); D column j is IN column j + HALF - DHALF.
    for (var i = lid; i < D_W * (TH / 2u); i = i + WG) {
      let v = (dv_filter((2u * (i / D_W) + HALF) * IN_W + i % D_W + HALF - DHALF) + vec2<u32>(DOWN_ROUND)) >>
              vec2<u32>(DOWN_SHIFT);
      smem[D_OFF + i] = v.x | (v.y << 16u);
    }
  }
  workgroupBarrier();

  // ---- 3. horizontal passes
  var sig: array<vec4<i32>, PIX>; // sigma1_sq, sigma2_sq, sigma12, inside the image
  for (var j = 0u; j < PIX; j = j + 1u) {
    let i = lid + j * WG;
    let x = i % TW;
    let r = i / TW;
    let a = h_filter(V_OFF + r * IN_W + x + HALF);
    let mu1 = a.m.x;
    let mu2 = a.m.y;
    let m2 = a.hi + ((a.lo + vec3<u32>(32768u)) >> vec3<u32>(16u)); // xx, yy, xy
    let s1 = bitcast<i32>(m2.x - mul_q32(mu1, mu1));
    let s2 = max(bitcast<i32>(m2.y - mul_q32(mu2, mu2)), 0);
    let s12 = bitcast<i32>(m2.z - mul_q32(mu1, mu2));
    let inside = select(0, 1, x0 + x < w && y0 + r < h);
    sig[j] = vec4<i32>(s1, s2, s12, inside);
  }
  if (HAS_DOWN) {
    for (var i = lid; i < (TW / 2u) * (TH / 2u); i = i + WG) {
      let ox = i % (TW / 2u);
      let oy = i / (TW / 2u);
      let gx = wg.x * (TW / 2u) + ox;
      let gy = wg.y * (TH / 2u) + oy;
      if (gx < P.nw && gy < P.nh) {
        let v = (dh_filter(D_OFF + oy * D_W + 2u * ox + DHALF) + vec2<u32>(32768u)) >> vec2<u32>(16u);
        store_next(gy * P.nw + gx, v.x | (v.y << 16u));
      }
    }
  }
  workgroupBarrier(); // smem is free from here on

  // ---- 4. cheap contributions; the pixels that need the gain go to this tile's region of
  // the gain queue (vif-gain-pass.wgsl takes them from there)
  var den_log = 0u;
  var num_non_log = vec2<u32>(0u, 0u);
  var den_non_log = 0u;
  var need = 0u; // bit j: pixel j needs the gain
  for (var j = 0u; j < PIX; j = j + 1u) {
    let s = sig[j];
    if (s.w != 0) {
      if (s.x < NSQ_I) {
        num_non_log = i64_add_u32(num_non_log, u32(s.y));
        den_non_log = den_non_log + 1u;
      } else {
        den_log = den_log + log2q32(u32(s.x) + VIF_NSQ) - 17u * 2048u;
        if (s.z > 0 && s.y > 0) {
          need = need | (1u << j);
        }
      }
    }
  }
  // Queue positions: an inclusive scan of the counts over the workgroup (Hillis-Steele,
  // ping-pong between smem[0..WG) and smem[WG..2WG)), so entries go in pixel order.
  let count = countOneBits(need);
  smem[lid] = count;
  workgroupBarrier();
  var src = 0u;
  for (var o = 1u; o < WG; o = o << 1u) {
    var v = smem[src + lid];
    if (lid >= o) {
      v = v + smem[src + lid - o];
    }
    src = WG - src;
    smem[src + lid] = v;
    workgroupBarrier();
  }
  let queued = smem[src + WG - 1u];
  var q = (P.tile_base + wg.y * P.tiles_x + wg.x) * (3u * TW * TH) + 3u * (smem[src + lid] - count);
  for (var j = 0u; j < PIX; j = j + 1u) {
    if ((need & (1u << j)) != 0u) {
      let s = sig[j];
      gain_queue[q] = u32(s.x);
      gain_queue[q + 1u] = u32(s.y);
      gain_queue[q + 2u] = u32(s.z);
      q = q + 3u;
    }
  }
  workgroupBarrier();

  // ---- 5. workgroup sums (u32 words are exact: per tile, den_log < 2^15 * TW * TH and
  // den_non_log <= TW * TH; num_non_log needs 64 bits)
  smem[lid] = den_log;
  smem[WG + lid] = num_non_log.x;
  smem[2u * WG + lid] = num_non_log.y;
  smem[3u * WG + lid] = den_non_log;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      let o = lid + s;
      smem[lid] = smem[lid] + smem[o];
      let nn = i64_add(vec2<u32>(smem[WG + lid], smem[2u * WG + lid]),
                       vec2<u32>(smem[WG + o], smem[2u * WG + o]));
      smem[WG + lid] = nn.x;
      smem[2u * WG + lid] = nn.y;
      smem[3u * WG + lid] = smem[3u * WG + lid] + smem[3u * WG + o];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let t = P.part_base + wg.y * P.tiles_x + wg.x;
    let st = P.part_stride;
    partials[t + 2u * st] = vec2<u32>(smem[0], 0u);
    partials[t + 3u * st] = vec2<u32>(smem[WG], smem[2u * WG]);
    partials[t + 4u * st] = vec2<u32>(smem[3u * WG], 0u);
    gain_count[P.tile_base + wg.y * P.tiles_x + wg.x] = queued;
  }
}
