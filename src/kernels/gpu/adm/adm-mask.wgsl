// #include "adm-common.wgsl"
//
// ADM pass 2, all four scales in one dispatch: contrast masking (DLM and AIM numerators of
// both gain-limit variants) and the denominators, over the scored rect of each scale.
//
// One workgroup per scored band row (rows of scale 0 first, then 1, 2, 3: workgroup g
// belongs to the last scale whose first_row <= g). Its invocations walk the row at a stride
// of MASK_WG, each keeping fifteen exact 64-bit sums (numerators h, v, d of variant 0, of
// variant 1, denominators h, v, d, AIM numerators h, v, d of variant 0, of variant 1; nine
// without variant 1, adm-variants.wgsl); a fixed-order two-step reduction adds them into
// the row's sums, which then get adm.h's per-ROW rounding shift (numerators: arithmetic,
// int64; denominators: logical, uint64) and go to rowvals[row_base + k * rows + row]
// (k < ADM_ROW_STATS).
// adm-final.wgsl adds the rows up.

const MASK_WG: u32 = 128u;

struct MaskScale {
  dims: vec4<u32>,    // band w, h; f_base; m_base
  rect: vec4<u32>,    // scored rect: left, right, top, bottom (half-open)
  shifts: vec4<u32>,  // numerator cube shifts h, v, d; numerator row shift R
  more: vec4<u32>,    // denominator cube shift (scales 1..3), denominator row shift D, first_row, row_base
  weights: vec4<u32>, // CSF weight h/v, d (scale 0: Q21, Q23; 1..3: Q32); denominator square shift qs (scales 1..3); 0
}

struct MaskParams {
  sc: array<MaskScale, 4>,
}

@group(0) @binding(0) var<storage, read> fbuf: array<vec4<i32>>;
@group(0) @binding(1) var<storage, read> mbuf: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> rowvals: array<vec2<u32>>;
@group(0) @binding(3) var<uniform> P: MaskParams;

const MASK_CHUNKS: u32 = 8u; // per stat, in the first reduction step

// 15 * 128 * 8 + 15 * 8 * 8 = 16320 bytes: within the 16384 WebGPU guarantees (9792 with
// variant 0 alone, which leaves room for more workgroups at once).
var<workgroup> red: array<vec2<u32>, ADM_ROW_STATS * MASK_WG>;
var<workgroup> chunk: array<vec2<u32>, ADM_ROW_STATS * MASK_CHUNKS>;

@compute @workgroup_size(MASK_WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let g = wg.x;
  var s = 0u;
  if (g >= P.sc[1].more.z) {
    s = 1u;
  }
  if (g >= P.sc[2].more.z) {
    s = 2u;
  }
  if (g >= P.sc[3].more.z) {
    s = 3u;
  }
  let sc = P.sc[s];
  let w = sc.dims.x;
  let h = sc.dims.y;
  let fb = sc.dims.z;
  let mb = sc.dims.w;
  let row = g - sc.more.z;
  let y = sc.rect.z + row;
  let yu = u32(adm_mirror(i32(y) - 1, i32(h))) * w;
  let yc = y * w;
  let yd = u32(adm_mirror(i32(y) + 1, i32(h))) * w;

  var n0 = vec2<u32>(0u, 0u);
  var n1 = vec2<u32>(0u, 0u);
  var n2 = vec2<u32>(0u, 0u);
  var e0 = vec2<u32>(0u, 0u);
  var e1 = vec2<u32>(0u, 0u);
  var e2 = vec2<u32>(0u, 0u);
  var d0 = vec2<u32>(0u, 0u);
  var d1 = vec2<u32>(0u, 0u);
  var d2 = vec2<u32>(0u, 0u);
  var a0 = vec2<u32>(0u, 0u);
  var a1 = vec2<u32>(0u, 0u);
  var a2 = vec2<u32>(0u, 0u);
  var b0 = vec2<u32>(0u, 0u);
  var b1 = vec2<u32>(0u, 0u);
  var b2 = vec2<u32>(0u, 0u);
  for (var x = sc.rect.x + lid; x < sc.rect.y; x += MASK_WG) {
    let xl = u32(adm_mirror(i32(x) - 1, i32(w)));
    let xr = u32(adm_mirror(i32(x) + 1, i32(w)));
    let fc = fbuf[fb + yc + x];
    // thr = 3x3 sum of F (mirrored; a neighbour may be the centre again) - F(centre) + C;
    // (.xy: DLM's of both variants, .zw: AIM's, from F' and C')
    let around = fbuf[fb + yu + xl] + fbuf[fb + yu + x] + fbuf[fb + yu + xr] +
                 fbuf[fb + yc + xl] + fbuf[fb + yc + xr] +
                 fbuf[fb + yd + xl] + fbuf[fb + yd + x] + fbuf[fb + yd + xr];
    let pos = yc + x;
    if (!ADM_TWO_VARIANTS) {
      // Variant 0 alone: thr of DLM and AIM, layouts in adm-dwt0.wgsl and adm-dwtn.wgsl.
      if (s == 0u) {
        let whv0 = bitcast<i32>(sc.weights.x);
        let wd0 = bitcast<i32>(sc.weights.y);
        let m0 = mbuf[mb + 2u * pos];
        let m1 = mbuf[mb + 2u * pos + 1u];
        let thr = around.xz + bitcast<vec2<i32>>(m0.xy);
        n0 = i64_add(n0, adm_mask0(whv0, 0u, adm_lo16(m0.z), thr.x, sc.shifts.x));
        n1 = i64_add(n1, adm_mask0(whv0, 1u, adm_hi16(m0.z), thr.x, sc.shifts.y));
        n2 = i64_add(n2, adm_mask0(wd0, 2u, adm_lo16(m0.w), thr.x, sc.shifts.z));
        d0 = i64_add(d0, adm_den0(adm_lo16(m1.y)));
        d1 = i64_add(d1, adm_den0(adm_hi16(m1.y)));
        d2 = i64_add(d2, adm_den0(adm_lo16(m1.z)));
        a0 = i64_add(a0, adm_mask0(whv0, 0u, adm_hi16(m0.w), thr.y, sc.shifts.x));
        a1 = i64_add(a1, adm_mask0(whv0, 1u, adm_lo16(m1.x), thr.y, sc.shifts.y));
        a2 = i64_add(a2, adm_mask0(wd0, 2u, adm_hi16(m1.x), thr.y, sc.shifts.z));
      } else {
        let m0 = bitcast<vec4<i32>>(mbuf[mb + 3u * pos]);
        let m1 = bitcast<vec4<i32>>(mbuf[mb + 3u * pos + 1u]);
        let m2 = bitcast<vec4<i32>>(mbuf[mb + 3u * pos + 2u]);
        let thr = around.xz + m0.xy;
        let whv = sc.weights.x;
        let wd = sc.weights.y;
        n0 = i64_add(n0, adm_mask(whv, m0.z, thr.x, sc.shifts.x));
        n1 = i64_add(n1, adm_mask(whv, m0.w, thr.x, sc.shifts.y));
        n2 = i64_add(n2, adm_mask(wd, m1.x, thr.x, sc.shifts.z));
        let qs = sc.weights.z;
        let cd = sc.more.x;
        d0 = i64_add(d0, adm_den(m1.y, qs, cd));
        d1 = i64_add(d1, adm_den(m1.z, qs, cd));
        d2 = i64_add(d2, adm_den(m1.w, qs, cd));
        a0 = i64_add(a0, adm_mask(whv, m2.x, thr.y, sc.shifts.x));
        a1 = i64_add(a1, adm_mask(whv, m2.y, thr.y, sc.shifts.y));
        a2 = i64_add(a2, adm_mask(wd, m2.z, thr.y, sc.shifts.z));
      }
    } else if (s == 0u) {
      let whv0 = bitcast<i32>(sc.weights.x);
      let wd0 = bitcast<i32>(sc.weights.y);
      let m0 = mbuf[mb + 3u * pos];
      let m1 = mbuf[mb + 3u * pos + 1u];
      let m2 = mbuf[mb + 3u * pos + 2u];
      let thr = around + bitcast<vec4<i32>>(vec4<u32>(m0.xy, m2.xy));
      n0 = i64_add(n0, adm_mask0(whv0, 0u, adm_lo16(m0.z), thr.x, sc.shifts.x));
      n1 = i64_add(n1, adm_mask0(whv0, 1u, adm_hi16(m0.z), thr.x, sc.shifts.y));
      n2 = i64_add(n2, adm_mask0(wd0, 2u, adm_lo16(m0.w), thr.x, sc.shifts.z));
      e0 = i64_add(e0, adm_mask0(whv0, 0u, adm_hi16(m0.w), thr.y, sc.shifts.x));
      e1 = i64_add(e1, adm_mask0(whv0, 1u, adm_lo16(m1.x), thr.y, sc.shifts.y));
      e2 = i64_add(e2, adm_mask0(wd0, 2u, adm_hi16(m1.x), thr.y, sc.shifts.z));
      d0 = i64_add(d0, adm_den0(adm_lo16(m1.y)));
      d1 = i64_add(d1, adm_den0(adm_hi16(m1.y)));
      d2 = i64_add(d2, adm_den0(adm_lo16(m1.z)));
      a0 = i64_add(a0, adm_mask0(whv0, 0u, adm_lo16(m2.z), thr.z, sc.shifts.x));
      a1 = i64_add(a1, adm_mask0(whv0, 1u, adm_hi16(m2.z), thr.z, sc.shifts.y));
      a2 = i64_add(a2, adm_mask0(wd0, 2u, adm_lo16(m2.w), thr.z, sc.shifts.z));
      b0 = i64_add(b0, adm_mask0(whv0, 0u, adm_hi16(m2.w), thr.w, sc.shifts.x));
      b1 = i64_add(b1, adm_mask0(whv0, 1u, adm_lo16(m1.w), thr.w, sc.shifts.y));
      b2 = i64_add(b2, adm_mask0(wd0, 2u, adm_hi16(m1.w), thr.w, sc.shifts.z));
    } else {
      let m0 = bitcast<vec4<i32>>(mbuf[mb + 5u * pos]);
      let m1 = bitcast<vec4<i32>>(mbuf[mb + 5u * pos + 1u]);
      let m2 = bitcast<vec4<i32>>(mbuf[mb + 5u * pos + 2u]);
      let m3 = bitcast<vec4<i32>>(mbuf[mb + 5u * pos + 3u]);
      let m4 = bitcast<vec4<i32>>(mbuf[mb + 5u * pos + 4u]);
      let thr = around + vec4<i32>(m0.xy, m2.w, m3.x);
      let whv = sc.weights.x;
      let wd = sc.weights.y;
      n0 = i64_add(n0, adm_mask(whv, m0.z, thr.x, sc.shifts.x));
      n1 = i64_add(n1, adm_mask(whv, m0.w, thr.x, sc.shifts.y));
      n2 = i64_add(n2, adm_mask(wd, m1.x, thr.x, sc.shifts.z));
      e0 = i64_add(e0, adm_mask(whv, m1.y, thr.y, sc.shifts.x));
      e1 = i64_add(e1, adm_mask(whv, m1.z, thr.y, sc.shifts.y));
      e2 = i64_add(e2, adm_mask(wd, m1.w, thr.y, sc.shifts.z));
      let qs = sc.weights.z;
      let cd = sc.more.x;
      d0 = i64_add(d0, adm_den(m2.x, qs, cd));
      d1 = i64_add(d1, adm_den(m2.y, qs, cd));
      d2 = i64_add(d2, adm_den(m2.z, qs, cd));
      a0 = i64_add(a0, adm_mask(whv, m3.y, thr.z, sc.shifts.x));
      a1 = i64_add(a1, adm_mask(whv, m3.z, thr.z, sc.shifts.y));
      a2 = i64_add(a2, adm_mask(wd, m3.w, thr.z, sc.shifts.z));
      b0 = i64_add(b0, adm_mask(whv, m4.x, thr.w, sc.shifts.x));
      b1 = i64_add(b1, adm_mask(whv, m4.y, thr.w, sc.shifts.y));
      b2 = i64_add(b2, adm_mask(wd, m4.z, thr.w, sc.shifts.z));
    }
  }

  red[lid] = n0;
  red[MASK_WG + lid] = n1;
  red[2u * MASK_WG + lid] = n2;
  red[ADM_ROW_DEN * MASK_WG + lid] = d0;
  red[(ADM_ROW_DEN + 1u) * MASK_WG + lid] = d1;
  red[(ADM_ROW_DEN + 2u) * MASK_WG + lid] = d2;
  red[ADM_ROW_AIM * MASK_WG + lid] = a0;
  red[(ADM_ROW_AIM + 1u) * MASK_WG + lid] = a1;
  red[(ADM_ROW_AIM + 2u) * MASK_WG + lid] = a2;
  if (ADM_TWO_VARIANTS) {
    red[ADM_ROW_EGL * MASK_WG + lid] = e0;
    red[(ADM_ROW_EGL + 1u) * MASK_WG + lid] = e1;
    red[(ADM_ROW_EGL + 2u) * MASK_WG + lid] = e2;
    red[ADM_ROW_AIM1 * MASK_WG + lid] = b0;
    red[(ADM_ROW_AIM1 + 1u) * MASK_WG + lid] = b1;
    red[(ADM_ROW_AIM1 + 2u) * MASK_WG + lid] = b2;
  }
  workgroupBarrier();
  // Fixed-order reduction in two steps: invocation c < 8 ADM_ROW_STATS adds chunk c % 8 (16
  // values) of stat c / 8, then invocation k < ADM_ROW_STATS adds stat k's 8 chunk sums.
  if (lid < ADM_ROW_STATS * MASK_CHUNKS) {
    let k = lid / MASK_CHUNKS;
    let base = k * MASK_WG + (lid - k * MASK_CHUNKS) * (MASK_WG / MASK_CHUNKS);
    var part = red[base];
    for (var i = 1u; i < MASK_WG / MASK_CHUNKS; i = i + 1u) {
      part = i64_add(part, red[base + i]);
    }
    chunk[lid] = part;
  }
  workgroupBarrier();
  if (lid < ADM_ROW_STATS) {
    var total = chunk[lid * MASK_CHUNKS];
    for (var i = 1u; i < MASK_CHUNKS; i = i + 1u) {
      total = i64_add(total, chunk[lid * MASK_CHUNKS + i]);
    }
    var v: vec2<u32>;
    if (lid >= ADM_ROW_DEN && lid < ADM_ROW_DEN + 3u) {
      v = u64_round_shr(total, sc.more.y);
    } else {
      v = i64_round_shr(total, sc.shifts.w);
    }
    let rows = sc.rect.w - sc.rect.z;
    rowvals[sc.more.w + lid * rows + row] = v;
  }
}
