// #include "adm-dwt.wgsl"
//
// ADM pass 1, scales 1..3: the same as adm-dwt0.wgsl, on the previous scale's LL bands
// (int32) with adm.h's 64-bit DWT sums ("scales 1..3"):
//   vertical:   scale 1: i32(sum F q) (no shift: wrapping int32 arithmetic is exactly that)
//               scales 2, 3: i32((sum F q + 2^15) >> 16)
//   horizontal: i32((sum F v + rnd) >> hs), hs = 15, 16, 15
// Outputs per position of the grown rect, pos = y * w + x:
//   fbuf[f_base + pos]       = (F0, F1, F'0, F'1)
//   mbuf[m_base + 5 pos ...] = (C0, C1, rh0, rv0), (rd0, rh1, rv1, rd1), (oh, ov, od, C'0),
//                              (C'1, ah0, av0, ad0), (ah1, av1, ad1, 0)
// or, variant 0 alone (ADM_TWO_VARIANTS false):
//   fbuf[f_base + pos]       = (F0, 0, F'0, 0)
//   mbuf[m_base + 3 pos ...] = (C0, C'0, rh0, rv0), (rd0, oh, ov, od), (ah0, av0, ad0, 0)
// and, when write_ll (scales 1, 2), the LL bands as in adm-dwt0.wgsl.

@group(0) @binding(0) var<storage, read> ll_in: array<i32>;

const LO = vec4<i32>(ADM_L0, ADM_L1, ADM_L2, ADM_L3);
const HI = vec4<i32>(ADM_H0, ADM_H1, ADM_H2, ADM_H3);

// sum f_k q_k exactly as an int64, for the DWT taps f (|f_k| < 2^15, sum |f_k| = 54822) and
// any int32 q: q = qh 2^16 + ql with ql in [0, 65535]; sum f qh fits i32 (< 54822 * 2^15),
// the positive and negative taps' sums of f ql fit u32 (<= 50582 * 65535).
fn dot4_i64(f: vec4<i32>, q: vec4<i32>) -> vec2<u32> {
  let hi = dot(f, q >> vec4<u32>(16u));
  let ql = bitcast<vec4<u32>>(q) & vec4<u32>(0xffffu);
  let pos = dot(bitcast<vec4<u32>>(max(f, vec4<i32>(0))), ql);
  let neg = dot(bitcast<vec4<u32>>(max(-f, vec4<i32>(0))), ql);
  return i64_sub(i64_add_u32(i64_shl(i64_from_i32(hi), 16u), pos), vec2<u32>(neg, 0u));
}

fn vertical(f: vec4<i32>, q: vec4<i32>, shift: u32) -> i32 {
  if (shift == 0u) {
    return dot(f, q); // i32(sum): the low 32 bits
  }
  return i64_to_i32(i64_round_shr(dot4_i64(f, q), shift));
}

// Horizontal filter of image img at tile position (lx, ly): (a, h, v, d).
fn horizontal(img: u32, lx: u32, ly: u32, shift: u32) -> vec4<i32> {
  let bl = (img * 2u * ADM_TH + ly) * ADM_IN_W + 2u * lx;
  let bh = bl + ADM_TH * ADM_IN_W;
  let l = vec4<i32>(tile_v[bl], tile_v[bl + 1u], tile_v[bl + 2u], tile_v[bl + 3u]);
  let hh = vec4<i32>(tile_v[bh], tile_v[bh + 1u], tile_v[bh + 2u], tile_v[bh + 3u]);
  let a = i64_to_i32(i64_round_shr(dot4_i64(LO, l), shift));
  let v = i64_to_i32(i64_round_shr(dot4_i64(HI, l), shift));
  let h = i64_to_i32(i64_round_shr(dot4_i64(LO, hh), shift));
  let d = i64_to_i32(i64_round_shr(dot4_i64(HI, hh), shift));
  return vec4<i32>(a, h, v, d);
}

// The outputs of a position when variant 0 alone is computed (as in adm-dwt0.wgsl).
fn store_variant0(pos: u32, rb: vec4<i32>, db: vec4<i32>, rh: i32, rv: i32, rd: i32, whv: u32, wd: u32) {
  let ah = db.y - rh;
  let av = db.z - rv;
  let ad = db.w - rd;
  let ch = adm_csf(whv, ah);
  let cv = adm_csf(whv, av);
  let cd = adm_csf(wd, ad);
  let gh = adm_csf(whv, rh);
  let gv = adm_csf(whv, rv);
  let gd = adm_csf(wd, rd);
  fbuf[P.base.x + pos] = vec4<i32>(ch.x + cv.x + cd.x, 0, gh.x + gv.x + gd.x, 0);
  let m = P.base.y + ADM_M_STRIDE * pos;
  mbuf[m] = bitcast<vec4<u32>>(vec4<i32>(ch.y + cv.y + cd.y, gh.y + gv.y + gd.y, rh, rv));
  mbuf[m + 1u] = bitcast<vec4<u32>>(vec4<i32>(rd, rb.y, rb.z, rb.w));
  mbuf[m + 2u] = bitcast<vec4<u32>>(vec4<i32>(ah, av, ad, 0));
}

@compute @workgroup_size(ADM_TW, ADM_TH)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let in_w = P.size.x;
  let in_h = P.size.y;
  let w = P.size.z;
  let h = P.size.w;
  let x0 = P.org.x + wg.x * ADM_TW;
  let y0 = P.org.y + wg.y * ADM_TH;
  let plane_in = in_w * in_h;

  for (var i = lid; i < 2u * ADM_IN_H * ADM_IN_W; i += ADM_WG) {
    let src = dwt_window_source(i, x0, y0, in_w, in_h);
    tile_in[i] = ll_in[src.x * plane_in + src.y];
  }
  workgroupBarrier();

  let vsh = P.shifts.x;
  for (var i = lid; i < 2u * ADM_TH * ADM_IN_W; i += ADM_WG) {
    let at = dwt_vertical_at(i);
    let b = at.x;
    let q = vec4<i32>(tile_in[b], tile_in[b + ADM_IN_W], tile_in[b + 2u * ADM_IN_W], tile_in[b + 3u * ADM_IN_W]);
    let o = at.y;
    tile_v[o] = vertical(LO, q, vsh);
    tile_v[o + ADM_TH * ADM_IN_W] = vertical(HI, q, vsh);
  }
  workgroupBarrier();

  let lx = lid3.x;
  let ly = lid3.y;
  let x = x0 + lx;
  let y = y0 + ly;
  let hsh = P.shifts.y;
  let rb = horizontal(0u, lx, ly, hsh);
  let db = horizontal(1u, lx, ly, hsh);
  if (x < w && y < h) {
    let pos = y * w + x;
    dwt_write_ll(pos, w, h, rb.x, db.x);
    if (dwt_in_grown(x, y)) {
      let angle = adm_angle_i32(rb.y, rb.z, db.y, db.z);
      let rh = adm_decouple(rb.y, db.y, angle, P.gain0, P.gain1);
      let rv = adm_decouple(rb.z, db.z, angle, P.gain0, P.gain1);
      let rd = adm_decouple(rb.w, db.w, angle, P.gain0, P.gain1);
      let whv = P.base.z;
      let wd = P.base.w;
      if (!ADM_TWO_VARIANTS) {
        store_variant0(pos, rb, db, rh.x, rv.x, rd.x, whv, wd);
        return;
      }
      // The impairments a = i32((int64)t - r) of both variants (i32 subtraction wraps alike).
      let ah = vec2<i32>(db.y - rh.x, db.y - rh.y);
      let av = vec2<i32>(db.z - rv.x, db.z - rv.y);
      let ad = vec2<i32>(db.w - rd.x, db.w - rd.y);
      // DLM: CSF of the impairment; AIM: CSF of the restored values.
      let ch0 = adm_csf(whv, ah.x);
      let cv0 = adm_csf(whv, av.x);
      let cd0 = adm_csf(wd, ad.x);
      let ch1 = adm_csf(whv, ah.y);
      let cv1 = adm_csf(whv, av.y);
      let cd1 = adm_csf(wd, ad.y);
      let gh0 = adm_csf(whv, rh.x);
      let gv0 = adm_csf(whv, rv.x);
      let gd0 = adm_csf(wd, rd.x);
      let gh1 = adm_csf(whv, rh.y);
      let gv1 = adm_csf(whv, rv.y);
      let gd1 = adm_csf(wd, rd.y);
      let nb = vec4<i32>(ch0.x + cv0.x + cd0.x, ch1.x + cv1.x + cd1.x, gh0.x + gv0.x + gd0.x, gh1.x + gv1.x + gd1.x);
      let ce = vec2<i32>(ch0.y + cv0.y + cd0.y, ch1.y + cv1.y + cd1.y);
      let cr = vec2<i32>(gh0.y + gv0.y + gd0.y, gh1.y + gv1.y + gd1.y);
      fbuf[P.base.x + pos] = nb;
      let m = P.base.y + ADM_M_STRIDE * pos;
      mbuf[m] = bitcast<vec4<u32>>(vec4<i32>(ce.x, ce.y, rh.x, rv.x));
      mbuf[m + 1u] = bitcast<vec4<u32>>(vec4<i32>(rd.x, rh.y, rv.y, rd.y));
      mbuf[m + 2u] = bitcast<vec4<u32>>(vec4<i32>(rb.y, rb.z, rb.w, cr.x));
      mbuf[m + 3u] = bitcast<vec4<u32>>(vec4<i32>(cr.y, ah.x, av.x, ad.x));
      mbuf[m + 4u] = bitcast<vec4<u32>>(vec4<i32>(ah.y, av.y, ad.y, 0));
    }
  }
}
