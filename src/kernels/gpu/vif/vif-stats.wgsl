// #include "vif-log2.wgsl"
// #include "../lib/luma.wgsl"
//
// vif-stats.wgsl: one VIF scale, one workgroup per TW x TH tile of the scale's image
// (the spec is src/kernels/cpu/vif.h). vif-kernel.ts prepends, per scale and bit depth:
//
//   WG, TW, TH           workgroup size, tile size (TW, TH even; TW * TH = PIX * WG)
//   PIX                  pixels of the tile per invocation
//   HALF, TAPS           the scale's statistics filter: half width, taps (centre first)
//   HAS_DOWN, DHALF, DTAPS   whether this pass also builds the next scale's image, and
//                        that (next scale's) filter; DHALF <= HALF
//   WIDE                 whether sample products need more than 16 bits (all but 8-bit
//                        scale 0): then they are filtered as 16-bit halves
//   MU_SHIFT, MU_ROUND   vertical rounding shift of the means (and its half)
//   SQ_SHIFT, SQ_ROUND, SQ_HI_SHIFT   of the second moments (SQ_HI_SHIFT = 16 - SQ_SHIFT)
//   DOWN_SHIFT, DOWN_ROUND            of the down-sampling's vertical pass
//   SMEM                 words of workgroup memory (the largest of the phases below)
//   the bindings, and load_pair(i) -> ref | dis << 16 of sample i of the scale's image,
//   and store_next(i, v) (writes the next scale's image; a no-op at scale 3).
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
//     (sigma1_sq >= 2^17, sigma12 > 0, sigma2_sq > 0) are appended, as (sigma1_sq,
//     sigma2_sq, sigma12), to the tile's own region of gain_queue (3 * TW * TH words at
//     tile * 3 * TW * TH; their order varies, their integer sum does not), their number to
//     gain_count[tile];
//  5. fixed-order workgroup tree of the 3 sums; invocation 0 writes the tile's partials,
//     partials[part_base + k * part_stride + tile] for stat k = 2, 3, 4 (vif.h's order).
// vif-gain-pass.wgsl then runs the binary64 gain path over the queues and writes stats 0, 1.
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
var<workgroup> qcount: atomic<u32>;

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
  if (lid == 0u) {
    atomicStore(&qcount, 0u);
  }

  // ---- 1. the tile and its halo
  for (var i = lid; i < IN_W * IN_H; i = i + WG) {
    let gx = mirror_clamp(i32(x0 + i % IN_W) - i32(HALF), w);
    let gy = mirror_clamp(i32(y0 + i / IN_W) - i32(HALF), h);
    smem[i] = load_pair(gy * w + gx);
  }
  workgroupBarrier();

  // ---- 2. vertical passes
  for (var i = lid; i < VP; i = i + WG) {
    let centre = (i / IN_W + HALF) * IN_W + i % IN_W;
    let p = smem[centre];
    let a = p & 0xffffu;
    let d = p >> 16u;
    let t0 = TAPS[0];
    var sa = t0 * a;
    var sd = t0 * d;
    let aa = a * a;
    let dd = d * d;
    let ad = a * d;
    var aa_lo = t0 * (aa & 0xffffu);
    var dd_lo = t0 * (dd & 0xffffu);
    var ad_lo = t0 * (ad & 0xffffu);
    var aa_hi = 0u;
    var dd_hi = 0u;
    var ad_hi = 0u;
    if (WIDE) {
      aa_hi = t0 * (aa >> 16u);
      dd_hi = t0 * (dd >> 16u);
      ad_hi = t0 * (ad >> 16u);
    }
    for (var k = 1u; k <= HALF; k = k + 1u) {
      let t = TAPS[k];
      let pu = smem[centre - k * IN_W];
      let pd = smem[centre + k * IN_W];
      let au = pu & 0xffffu;
      let du = pu >> 16u;
      let ab = pd & 0xffffu;
      let db = pd >> 16u;
      sa = sa + t * (au + ab);
      sd = sd + t * (du + db);
      let aau = au * au;
      let ddu = du * du;
      let adu = au * du;
      let aab = ab * ab;
      let ddb = db * db;
      let adb = ab * db;
      aa_lo = aa_lo + t * ((aau & 0xffffu) + (aab & 0xffffu));
      dd_lo = dd_lo + t * ((ddu & 0xffffu) + (ddb & 0xffffu));
      ad_lo = ad_lo + t * ((adu & 0xffffu) + (adb & 0xffffu));
      if (WIDE) {
        aa_hi = aa_hi + t * ((aau >> 16u) + (aab >> 16u));
        dd_hi = dd_hi + t * ((ddu >> 16u) + (ddb >> 16u));
        ad_hi = ad_hi + t * ((adu >> 16u) + (adb >> 16u));
      }
    }
    smem[V_OFF + i] = ((sa + MU_ROUND) >> MU_SHIFT) | (((sd + MU_ROUND) >> MU_SHIFT) << 16u);
    smem[V_OFF + VP + i] = second_moment(aa_hi, aa_lo);
    smem[V_OFF + 2u * VP + i] = second_moment(dd_hi, dd_lo);
    smem[V_OFF + 3u * VP + i] = second_moment(ad_hi, ad_lo);
  }
  if (HAS_DOWN) {
    // Even tile rows only (y0 is even); D column j is IN column j + HALF - DHALF.
    for (var i = lid; i < D_W * (TH / 2u); i = i + WG) {
      let centre = (2u * (i / D_W) + HALF) * IN_W + i % D_W + HALF - DHALF;
      let p = smem[centre];
      var sa = DTAPS[0] * (p & 0xffffu);
      var sd = DTAPS[0] * (p >> 16u);
      for (var k = 1u; k <= DHALF; k = k + 1u) {
        let t = DTAPS[k];
        let pu = smem[centre - k * IN_W];
        let pd = smem[centre + k * IN_W];
        sa = sa + t * ((pu & 0xffffu) + (pd & 0xffffu));
        sd = sd + t * ((pu >> 16u) + (pd >> 16u));
      }
      smem[D_OFF + i] = ((sa + DOWN_ROUND) >> DOWN_SHIFT) | (((sd + DOWN_ROUND) >> DOWN_SHIFT) << 16u);
    }
  }
  workgroupBarrier();

  // ---- 3. horizontal passes
  var sig: array<vec4<i32>, PIX>; // sigma1_sq, sigma2_sq, sigma12, inside the image
  for (var j = 0u; j < PIX; j = j + 1u) {
    let i = lid + j * WG;
    let x = i % TW;
    let r = i / TW;
    let c = V_OFF + r * IN_W + x + HALF;
    let t0 = TAPS[0];
    let m = smem[c];
    var mu1 = t0 * (m & 0xffffu);
    var mu2 = t0 * (m >> 16u);
    let vxx = smem[c + VP];
    let vyy = smem[c + 2u * VP];
    let vxy = smem[c + 3u * VP];
    var xx_lo = t0 * (vxx & 0xffffu);
    var xx_hi = t0 * (vxx >> 16u);
    var yy_lo = t0 * (vyy & 0xffffu);
    var yy_hi = t0 * (vyy >> 16u);
    var xy_lo = t0 * (vxy & 0xffffu);
    var xy_hi = t0 * (vxy >> 16u);
    for (var k = 1u; k <= HALF; k = k + 1u) {
      let t = TAPS[k];
      let ml = smem[c - k];
      let mr = smem[c + k];
      mu1 = mu1 + t * ((ml & 0xffffu) + (mr & 0xffffu));
      mu2 = mu2 + t * ((ml >> 16u) + (mr >> 16u));
      let xl = smem[c + VP - k];
      let xr = smem[c + VP + k];
      xx_lo = xx_lo + t * ((xl & 0xffffu) + (xr & 0xffffu));
      xx_hi = xx_hi + t * ((xl >> 16u) + (xr >> 16u));
      let yl = smem[c + 2u * VP - k];
      let yr = smem[c + 2u * VP + k];
      yy_lo = yy_lo + t * ((yl & 0xffffu) + (yr & 0xffffu));
      yy_hi = yy_hi + t * ((yl >> 16u) + (yr >> 16u));
      let cl = smem[c + 3u * VP - k];
      let cr = smem[c + 3u * VP + k];
      xy_lo = xy_lo + t * ((cl & 0xffffu) + (cr & 0xffffu));
      xy_hi = xy_hi + t * ((cl >> 16u) + (cr >> 16u));
    }
    let xx = xx_hi + ((xx_lo + 32768u) >> 16u);
    let yy = yy_hi + ((yy_lo + 32768u) >> 16u);
    let xy = xy_hi + ((xy_lo + 32768u) >> 16u);
    let s1 = bitcast<i32>(xx - mul_q32(mu1, mu1));
    let s2 = max(bitcast<i32>(yy - mul_q32(mu2, mu2)), 0);
    let s12 = bitcast<i32>(xy - mul_q32(mu1, mu2));
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
        let c = D_OFF + oy * D_W + 2u * ox + DHALF;
        let p = smem[c];
        var sa = DTAPS[0] * (p & 0xffffu);
        var sd = DTAPS[0] * (p >> 16u);
        for (var k = 1u; k <= DHALF; k = k + 1u) {
          let t = DTAPS[k];
          let pl = smem[c - k];
          let pr = smem[c + k];
          sa = sa + t * ((pl & 0xffffu) + (pr & 0xffffu));
          sd = sd + t * ((pl >> 16u) + (pr >> 16u));
        }
        store_next(gy * P.nw + gx, ((sa + 32768u) >> 16u) | (((sd + 32768u) >> 16u) << 16u));
      }
    }
  }
  workgroupBarrier(); // smem is free from here on

  // ---- 4. cheap contributions; the pixels that need the gain go to this tile's region of
  // the gain queue (vif-gain-pass.wgsl takes them from there)
  var den_log = 0u;
  var num_non_log = vec2<u32>(0u, 0u);
  var den_non_log = 0u;
  let tile = P.tile_base + wg.y * P.tiles_x + wg.x;
  let region = tile * (3u * TW * TH);
  for (var j = 0u; j < PIX; j = j + 1u) {
    let s = sig[j];
    if (s.w != 0) {
      if (s.x < NSQ_I) {
        num_non_log = i64_add_u32(num_non_log, u32(s.y));
        den_non_log = den_non_log + 1u;
      } else {
        den_log = den_log + log2q32(u32(s.x) + VIF_NSQ) - 17u * 2048u;
        if (s.z > 0 && s.y > 0) {
          let q = region + 3u * atomicAdd(&qcount, 1u);
          gain_queue[q] = u32(s.x);
          gain_queue[q + 1u] = u32(s.y);
          gain_queue[q + 2u] = u32(s.z);
        }
      }
    }
  }

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
    gain_count[tile] = atomicLoad(&qcount);
  }
}
