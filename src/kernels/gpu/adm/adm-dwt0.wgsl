// #include "adm-dwt.wgsl"
// #include "../lib/luma.wgsl"
//
// ADM pass 1, scale 0: DWT of the ref and dis luma planes, the LL bands (the input of
// scale 1), and for the positions the masking step reads (the scored rect grown by one),
// the angle test, decouple and CSF of both gain-limit variants (P.gain0, P.gain1) with the
// scale-0 CSF weights P.base.z (h, v) and P.base.w (d).
//
// One workgroup per ADM_TW x ADM_TH tile of band positions, one invocation per position.
// The tile's input window (mirrored at the frame borders) is loaded once into workgroup
// memory as centred int16 samples, the vertical filter runs on it into a second tile
// (lo/hi rows, shared by neighbouring positions), then each invocation filters
// horizontally and does the per-position work. All arithmetic is int32 here (adm.h:
// "scale 0"), except the decouple division and the angle test (i64.wgsl).
//
// Outputs per position (y, x) of the grown rect, pos = y * w + x:
//   fbuf[f_base + pos]        = (F0, F1, F'0, F'1): neighbour terms summed over bands, of
//                               the CSF of the impairment (F, DLM) and of the restored
//                               values (F', AIM)
//   mbuf[m_base + 3 pos]      = (C0, C1, pack(rh0, rv0), pack(rd0, rh1))
//   mbuf[m_base + 3 pos + 1]  = (pack(rv1, rd1), pack(oh, ov), pack(od, 0), pack(av1, ad1))
//   mbuf[m_base + 3 pos + 2]  = (C'0, C'1, pack(ah0, av0), pack(ad0, ah1))
// (r*: restored coefficients, a*: impairments, variant 0 = gain limit P.gain0 (100 at
// default options), 1 = P.gain1 (1); C, C': centre terms as F, F'; o*: ref bands; pack: two
// int16 in a word, low half first.) Variant 0 alone (ADM_TWO_VARIANTS false):
//   fbuf[f_base + pos]        = (F0, 0, F'0, 0)
//   mbuf[m_base + 2 pos]      = (C0, C'0, pack(rh0, rv0), pack(rd0, ah0))
//   mbuf[m_base + 2 pos + 1]  = (pack(av0, ad0), pack(oh, ov), pack(od, 0), 0)
// And, when write_ll, the LL bands:
//   ll_out[y * w + x] (ref), ll_out[w * h + y * w + x] (dis).

override BITDEPTH: u32 = 8u;

@group(0) @binding(0) var<storage, read> ref_luma: array<u32>;
@group(0) @binding(1) var<storage, read> dis_luma: array<u32>;

fn sample(img: u32, i: u32) -> u32 {
  if (BITDEPTH == 8u) {
    if (img == 0u) {
      return luma_sample_8(&ref_luma, i);
    }
    return luma_sample_8(&dis_luma, i);
  }
  if (img == 0u) {
    return luma_sample_16(&ref_luma, i);
  }
  return luma_sample_16(&dis_luma, i);
}

// Horizontal filter of image img at tile position (lx, ly): (a, h, v, d), int16 values.
fn horizontal(img: u32, lx: u32, ly: u32) -> vec4<i32> {
  let bl = (img * 2u * ADM_TH + ly) * ADM_IN_W + 2u * lx;
  let bh = bl + ADM_TH * ADM_IN_W;
  let l0 = tile_v[bl];
  let l1 = tile_v[bl + 1u];
  let l2 = tile_v[bl + 2u];
  let l3 = tile_v[bl + 3u];
  let h0 = tile_v[bh];
  let h1 = tile_v[bh + 1u];
  let h2 = tile_v[bh + 2u];
  let h3 = tile_v[bh + 3u];
  let a = i16c((ADM_L0 * l0 + ADM_L1 * l1 + ADM_L2 * l2 + ADM_L3 * l3 + 32768) >> 16u);
  let v = i16c((ADM_H0 * l0 + ADM_H1 * l1 + ADM_H2 * l2 + ADM_H3 * l3 + 32768) >> 16u);
  let h = i16c((ADM_L0 * h0 + ADM_L1 * h1 + ADM_L2 * h2 + ADM_L3 * h3 + 32768) >> 16u);
  let d = i16c((ADM_H0 * h0 + ADM_H1 * h1 + ADM_H2 * h2 + ADM_H3 * h3 + 32768) >> 16u);
  return vec4<i32>(a, h, v, d);
}

// The outputs of a position when variant 0 alone is computed: its impairments, their CSF
// (DLM) and that of the restored values (AIM), the restored values and the ref bands.
fn store_variant0(pos: u32, rb: vec4<i32>, db: vec4<i32>, rh: i32, rv: i32, rd: i32, whv: i32, wd: i32) {
  let ah = i16c(db.y - rh);
  let av = i16c(db.z - rv);
  let ad = i16c(db.w - rd);
  let ch = adm_csf0(whv, 0u, ah);
  let cv = adm_csf0(whv, 1u, av);
  let cd = adm_csf0(wd, 2u, ad);
  let gh = adm_csf0(whv, 0u, rh);
  let gv = adm_csf0(whv, 1u, rv);
  let gd = adm_csf0(wd, 2u, rd);
  fbuf[P.base.x + pos] = vec4<i32>(ch.x + cv.x + cd.x, 0, gh.x + gv.x + gd.x, 0);
  let m = P.base.y + ADM_M_STRIDE0 * pos;
  mbuf[m] = vec4<u32>(bitcast<u32>(ch.y + cv.y + cd.y), bitcast<u32>(gh.y + gv.y + gd.y), adm_pack16(rh, rv), adm_pack16(rd, ah));
  mbuf[m + 1u] = vec4<u32>(adm_pack16(av, ad), adm_pack16(rb.y, rb.z), adm_pack16(rb.w, 0), 0u);
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
  let centre = 1 << (BITDEPTH - 1u);

  // Input window: rows 2 y0 - 1 .. 2 y0 + 2 TH, columns 2 x0 - 1 .. 2 x0 + 2 TW, mirrored.
  for (var i = lid; i < 2u * ADM_IN_H * ADM_IN_W; i += ADM_WG) {
    let src = dwt_window_source(i, x0, y0, in_w, in_h);
    tile_in[i] = i16c(i32(sample(src.x, src.y)) - centre);
  }
  workgroupBarrier();

  // Vertical filter: vlo = (sum L c + 2^(B-1)) >> B, vhi likewise (int16 results).
  for (var i = lid; i < 2u * ADM_TH * ADM_IN_W; i += ADM_WG) {
    let at = dwt_vertical_at(i);
    let b = at.x;
    let s0 = tile_in[b];
    let s1 = tile_in[b + ADM_IN_W];
    let s2 = tile_in[b + 2u * ADM_IN_W];
    let s3 = tile_in[b + 3u * ADM_IN_W];
    let lo = i16c((ADM_L0 * s0 + ADM_L1 * s1 + ADM_L2 * s2 + ADM_L3 * s3 + centre) >> BITDEPTH);
    let hi = i16c((ADM_H0 * s0 + ADM_H1 * s1 + ADM_H2 * s2 + ADM_H3 * s3 + centre) >> BITDEPTH);
    let o = at.y;
    tile_v[o] = lo;
    tile_v[o + ADM_TH * ADM_IN_W] = hi;
  }
  workgroupBarrier();

  let lx = lid3.x;
  let ly = lid3.y;
  let x = x0 + lx;
  let y = y0 + ly;
  let rb = horizontal(0u, lx, ly);
  let db = horizontal(1u, lx, ly);
  if (x < w && y < h) {
    let pos = y * w + x;
    dwt_write_ll(pos, w, h, rb.x, db.x);
    if (dwt_in_grown(x, y)) {
      let angle = adm_angle_i16(rb.y, rb.z, db.y, db.z);
      let rh = adm_decouple0(rb.y, db.y, angle, P.gain0, P.gain1);
      let rv = adm_decouple0(rb.z, db.z, angle, P.gain0, P.gain1);
      let rd = adm_decouple0(rb.w, db.w, angle, P.gain0, P.gain1);
      let whv = bitcast<i32>(P.base.z);
      let wd = bitcast<i32>(P.base.w);
      if (!ADM_TWO_VARIANTS) {
        store_variant0(pos, rb, db, rh.x, rv.x, rd.x, whv, wd);
        return;
      }
      // The impairments a = i16(t - r) of both variants.
      let ah = vec2<i32>(i16c(db.y - rh.x), i16c(db.y - rh.y));
      let av = vec2<i32>(i16c(db.z - rv.x), i16c(db.z - rv.y));
      let ad = vec2<i32>(i16c(db.w - rd.x), i16c(db.w - rd.y));
      // DLM: CSF of the impairment; AIM: CSF of the restored values.
      let ch0 = adm_csf0(whv, 0u, ah.x);
      let cv0 = adm_csf0(whv, 1u, av.x);
      let cd0 = adm_csf0(wd, 2u, ad.x);
      let ch1 = adm_csf0(whv, 0u, ah.y);
      let cv1 = adm_csf0(whv, 1u, av.y);
      let cd1 = adm_csf0(wd, 2u, ad.y);
      let gh0 = adm_csf0(whv, 0u, rh.x);
      let gv0 = adm_csf0(whv, 1u, rv.x);
      let gd0 = adm_csf0(wd, 2u, rd.x);
      let gh1 = adm_csf0(whv, 0u, rh.y);
      let gv1 = adm_csf0(whv, 1u, rv.y);
      let gd1 = adm_csf0(wd, 2u, rd.y);
      let nb = vec4<i32>(ch0.x + cv0.x + cd0.x, ch1.x + cv1.x + cd1.x, gh0.x + gv0.x + gd0.x, gh1.x + gv1.x + gd1.x);
      let ce = vec2<i32>(ch0.y + cv0.y + cd0.y, ch1.y + cv1.y + cd1.y);
      let cr = vec2<i32>(gh0.y + gv0.y + gd0.y, gh1.y + gv1.y + gd1.y);
      fbuf[P.base.x + pos] = nb;
      let m = P.base.y + ADM_M_STRIDE0 * pos;
      mbuf[m] = vec4<u32>(bitcast<u32>(ce.x), bitcast<u32>(ce.y), adm_pack16(rh.x, rv.x), adm_pack16(rd.x, rh.y));
      mbuf[m + 1u] = vec4<u32>(adm_pack16(rv.y, rd.y), adm_pack16(rb.y, rb.z), adm_pack16(rb.w, 0), adm_pack16(av.y, ad.y));
      mbuf[m + 2u] = vec4<u32>(bitcast<u32>(cr.x), bitcast<u32>(cr.y), adm_pack16(ah.x, av.x), adm_pack16(ad.x, ah.y));
    }
  }
}
