// #include "../common/float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
// #include "../common/serial-rows.wgsl"
//
// float_adm's per-pixel work (float_adm.cpp's dwt(), decouple(), csf(), denominator() and
// masked()) on the GPU, driven by float_adm-gpu.ts, bit for bit as the C++ does it: every
// float product, sum and comparison is lib/f32.wgsl's (integer arithmetic: no contraction
// into FMAs, no flushed subnormals), every double step f64.wgsl's, in the C++'s order. The
// decoupling gain's division is rcpss plus one Newton step as on the host, rcpss being the
// host's own from a table it computed (float_adm.cpp's rcpTable()). What comes out per
// scored row of each scale is the row's float sums of the p-norm terms, summed in column
// order by one invocation, as the C++ sums them; the sums over rows and scales, the p-th
// roots and the scores are the C++ extractor's finishStats on the host.
//
// Planes are floats (bit patterns), rows packed, in `planes`: scale 0's ref and dis, then
// per scale the db2 bands ref a h v d, dis a h v d (each (w+1)/2 x (h+1)/2).
//   to_float:  a picture's luma -> float plane, offset by -128 (floatPlane's scaling)
//   dwt:       ref and dis planes -> their four bands (one output sample per invocation)
//   decouple:  the bands -> the restored and additive detail, CSF-weighted, and their
//              masking shares (|csf| / 30), over the tap region, into `csf`
//   terms:     per scored sample, the p-norm terms of the denominator, the DLM and the AIM
//              numerators per band, into `terms`
//   row_sums:  each scored row's terms summed in float, into the stats slot (the terms loaded
//              through workgroup tiles: serial-rows.wgsl)

const EPS: u32 = 0x0da24260u; // 1e-30f
const ONE: u32 = 0x3f800000u;
// libvmaf's FLOAT_ONE_BY_30 and _15 (doubles).
const ONE_BY_30: vec2<u32> = vec2<u32>(0x203e01fcu, 0x3fa11111u);
const ONE_BY_15: vec2<u32> = vec2<u32>(0x1fd00e7du, 0x3fb11111u);
// The db2 filters as floats.
const LO = array<u32, 4>(0x3ef746eau, 0x3f5625efu, 0x3e6585f8u, 0xbe0483eeu);
const HI = array<u32, 4>(0xbe0483eeu, 0xbe6585f8u, 0x3f5625efu, 0xbef746eau);

override BIT_DEPTH: u32 = 8u;

struct Params {
  src_word: u32,      // dwt: the ref plane's first word in `planes` (to_float: the luma's in `pic`)
  src2_word: u32,     // dwt: the dis plane's
  width: u32,         // dwt: the input's size; the others: the bands'
  height: u32,
  dst_word: u32,      // to_float / dwt: first word written; the others: the scale's bands
  out_width: u32,     // invocations in x
  out_height: u32,    // invocations in y (row_sums: rows)
  x0: u32,            // the region's origin in the bands
  y0: u32,
  scale_bits: u32,    // to_float: 1 / 2^k as a float
  f_h: u32,           // the scale's CSF factors
  f_v: u32,
  f_d: u32,
  cos1: u32,          // cos^2(1 degree), float
  rcp_bits: u32,      // the rcp table's index bits (0: divide)
  bypass_cm: u32,
  gain_limit: vec2<u32>,  // double
  stats_word: u32,    // row_sums: first word in the stats slot
  pad0: u32,
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> planes: array<u32>;
@group(0) @binding(2) var<storage, read_write> csf: array<u32>;
@group(0) @binding(3) var<storage, read_write> terms: array<u32>;
@group(0) @binding(4) var<storage, read_write> stats: array<u32>;
@group(0) @binding(5) var<uniform> params: Params;
@group(0) @binding(6) var<storage, read> rcp_table: array<u32>;

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  luma_to_float(&planes, id);
}

// Four taps accumulated in float from 0, first tap first.
fn taps4(f: array<u32, 4>, s: array<u32, 4>) -> u32 {
  var acc = 0u;
  for (var k = 0u; k < 4u; k = k + 1u) {
    acc = f32_add_serial(acc, f32_mul(f[k], s[k]));
  }
  return acc;
}

// One plane's bands at (j, i): each of the four columns' vertical low and high pass, then
// the horizontal filters of those: a = lo.lo, v = hi(lo), h = lo(hi), d = hi(hi).
fn dwt_one(src: u32, j: u32, i: u32, dst: u32, o: u32, m: u32) {
  let w = i32(params.width);
  let h = i32(params.height);
  var rows: array<u32, 4>;
  for (var k = 0; k < 4; k = k + 1) {
    rows[k] = src + mirror_skip_first(2 * i32(i) - 1 + k, h) * u32(w);
  }
  var lo: array<u32, 4>;
  var hi: array<u32, 4>;
  for (var k = 0; k < 4; k = k + 1) {
    let x = mirror_skip_first(2 * i32(j) - 1 + k, w);
    let s = array<u32, 4>(planes[rows[0] + x], planes[rows[1] + x], planes[rows[2] + x], planes[rows[3] + x]);
    lo[k] = taps4(LO, s);
    hi[k] = taps4(HI, s);
  }
  planes[dst + o] = taps4(LO, lo);
  planes[dst + m + o] = taps4(LO, hi);
  planes[dst + 2u * m + o] = taps4(HI, lo);
  planes[dst + 3u * m + o] = taps4(HI, hi);
}

@compute @workgroup_size(16, 16)
fn dwt(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let ow = params.out_width;
  let oh = params.out_height;
  if (id.x >= ow || id.y >= oh) {
    return;
  }
  let m = ow * oh;
  let o = id.y * ow + id.x;
  dwt_one(params.src_word, id.x, id.y, params.dst_word, o, m);
  dwt_one(params.src2_word, id.x, id.y, params.dst_word + 4u * m, o, m);
}

// This host's rcpss (float_adm.cpp's rcpModel).
fn rcp(x: u32) -> u32 {
  let sign = x & 0x80000000u;
  let e = (x >> 23u) & 0xffu;
  let m = x & 0x7fffffu;
  if (e == 0u) {
    return sign | 0x7f800000u;
  }
  if (e == 0xffu) {
    return select(sign, x | 0x400000u, m != 0u);
  }
  let r = rcp_table[m >> (23u - params.rcp_bits)];
  let re = i32((r >> 23u) & 0xffu) - (i32(e) - 127);
  if (re <= 0) {
    return sign;
  }
  if (re >= 255) {
    return sign | 0x7f800000u;
  }
  return sign | (u32(re) << 23u) | (r & 0x7fffffu);
}

// n / d as the host does it: n * (r + r * (1 - d * r)) with r = rcpss(d), or a plain
// division where the host has no SSE.
fn divide(n: u32, d: u32) -> u32 {
  if (params.rcp_bits == 0u) {
    return f32_div(n, d);
  }
  let r = rcp(d);
  return f32_mul(n, f32_add(r, f32_mul(r, f32_sub(ONE, f32_mul(d, r)))));
}

fn clip01(k: u32) -> u32 {
  if (f32_lt(k, 0u)) {
    return 0u;
  }
  if (f32_gt(k, ONE)) {
    return ONE;
  }
  return k;
}

// The restored value past the enhancement gain limit (double products and comparisons).
fn enhance(rst: u32, t: u32, same_angle: bool) -> u32 {
  if (!same_angle) {
    return rst;
  }
  let scaled = f64_mul(f64_from_f32_bits(rst), params.gain_limit);
  let td = f64_from_f32_bits(t);
  if (f32_gt(rst, 0u)) {
    return f32_from_f64(select(scaled, td, f64_lt(td, scaled))); // std::min
  }
  if (f32_lt(rst, 0u)) {
    return f32_from_f64(select(scaled, td, f64_lt(scaled, td))); // std::max
  }
  return rst;
}

fn abs32(x: u32) -> u32 {
  return x & 0x7fffffffu;
}

// |v| / 30 in double, rounded to float: a sample's share of its neighbours' thresholds.
fn share(v: u32) -> u32 {
  return f32_from_f64(f64_mul(ONE_BY_30, f64_from_f32_bits(abs32(v))));
}

@compute @workgroup_size(16, 16)
fn decouple(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  if (id.x >= params.out_width || id.y >= params.out_height) {
    return;
  }
  let w = params.width;
  let m = w * params.height;
  let o = (params.y0 + id.y) * w + params.x0 + id.x;
  let b = params.dst_word;
  let oh = planes[b + m + o];
  let ov = planes[b + 2u * m + o];
  let od = planes[b + 3u * m + o];
  let th = planes[b + 5u * m + o];
  let tv = planes[b + 6u * m + o];
  let td = planes[b + 7u * m + o];
  let kh = clip01(divide(th, f32_add(oh, EPS)));
  let kv = clip01(divide(tv, f32_add(ov, EPS)));
  let kd = clip01(divide(td, f32_add(od, EPS)));
  let dot = f32_add(f32_mul(oh, th), f32_mul(ov, tv));
  let o_mag = f32_add(f32_mul(oh, oh), f32_mul(ov, ov));
  let t_mag = f32_add(f32_mul(th, th), f32_mul(tv, tv));
  let same = f64_ge(f64_from_f32_bits(dot), F64_ZERO) &&
    f64_ge(f64_from_f32_bits(f32_mul(dot, dot)), f64_from_f32_bits(f32_mul(f32_mul(params.cos1, o_mag), t_mag)));
  let rh = enhance(f32_mul(kh, oh), th, same);
  let rv = enhance(f32_mul(kv, ov), tv, same);
  let rd = enhance(f32_mul(kd, od), td, same);
  let f = array<u32, 3>(params.f_h, params.f_v, params.f_d);
  let r = array<u32, 3>(rh, rv, rd);
  let a = array<u32, 3>(f32_sub(th, rh), f32_sub(tv, rv), f32_sub(td, rd));
  for (var k = 0u; k < 3u; k = k + 1u) {
    let ac = f32_mul(f[k], a[k]);
    let rc = f32_mul(f[k], r[k]);
    csf[k * m + o] = ac;
    csf[(3u + k) * m + o] = share(ac);
    csf[(6u + k) * m + o] = rc;
    csf[(9u + k) * m + o] = share(rc);
  }
}

// The masking threshold at (i, j) from the masker's CSF planes (first plane `masker`) and
// its shares (first plane `flt`): per band the 3x3 shares, the centre at |csf| / 15 instead,
// in the C++'s order, the bands' sums added in turn.
fn threshold(masker: u32, flt: u32, i: u32, j: u32) -> u32 {
  let w = params.width;
  let h = params.height;
  let m = w * h;
  let ym = select(i - 1u, 1u, i == 0u);
  let yp = select(i + 1u, h - 1u, i == h - 1u);
  let xm = select(j - 1u, 1u, j == 0u);
  let xp = select(j + 1u, w - 1u, j == w - 1u);
  var thr = 0u;
  for (var b = 0u; b < 3u; b = b + 1u) {
    let f = (flt + b) * m;
    let r0 = f + ym * w;
    let r1 = f + i * w;
    let r2 = f + yp * w;
    var sum = 0u;
    sum = f32_add_serial(sum, csf[r0 + xm]);
    sum = f32_add_serial(sum, csf[r0 + j]);
    sum = f32_add_serial(sum, csf[r0 + xp]);
    sum = f32_add_serial(sum, csf[r1 + xm]);
    let centre = abs32(csf[(masker + b) * m + i * w + j]);
    sum = f32_from_f64(f64_add(f64_from_f32_bits(sum), f64_mul(ONE_BY_15, f64_from_f32_bits(centre))));
    sum = f32_add_serial(sum, csf[r1 + xp]);
    sum = f32_add_serial(sum, csf[r2 + xm]);
    sum = f32_add_serial(sum, csf[r2 + j]);
    sum = f32_add_serial(sum, csf[r2 + xp]);
    thr = f32_add_serial(thr, sum);
  }
  return thr;
}

fn cube(x: u32) -> u32 {
  return f32_mul(f32_mul(x, x), x);
}

// max(|x| - thr, 0) cubed.
fn masked_term(x: u32, thr: u32) -> u32 {
  var v = f32_sub(abs32(x), thr);
  if (f32_lt(v, 0u)) {
    v = 0u;
  }
  return cube(v);
}

@compute @workgroup_size(16, 16)
fn terms_pass(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let sw = params.out_width;
  let sh = params.out_height;
  if (id.x >= sw || id.y >= sh) {
    return;
  }
  let w = params.width;
  let m = w * params.height;
  let i = params.y0 + id.y;
  let j = params.x0 + id.x;
  let o = i * w + j;
  let f = array<u32, 3>(params.f_h, params.f_v, params.f_d);
  var thr_num = 0u;
  var thr_aim = 0u;
  if (params.bypass_cm == 0u) {
    thr_num = threshold(0u, 3u, i, j); // the additive part masks the restored one
    thr_aim = threshold(6u, 9u, i, j); // and the restored part the additive one
  }
  let sm = sw * sh;
  let t = id.y * sw + id.x;
  for (var k = 0u; k < 3u; k = k + 1u) {
    let ref_band = planes[params.dst_word + (1u + k) * m + o];
    terms[k * sm + t] = cube(abs32(f32_mul(f[k], ref_band)));
    terms[(3u + k) * sm + t] = masked_term(csf[(6u + k) * m + o], thr_num);
    terms[(6u + k) * sm + t] = masked_term(csf[k * m + o], thr_aim);
  }
}

var<workgroup> tile: array<u32, SR_ROWS * SR_TILE>;

// row_sums' loads of sum k's tile c0 for invocation lid (0 outside).
fn term_words(k: u32, group: u32, lid: u32, c0: u32, v: ptr<function, array<u32, SR_PER>>) {
  let sw = params.out_width;
  let sh = params.out_height;
  for (var e = 0u; e < SR_PER; e = e + 1u) {
    let p = sr_place(lid, e);
    let y = group * SR_ROWS + p.x;
    let x = c0 + p.y;
    var t = 0u;
    if (y < sh && x < sw) {
      t = terms[k * sw * sh + y * sw + x];
    }
    (*v)[e] = t;
  }
}

// Scored rows' sum number group.y (of nine) in column order, one invocation per row; sum 0's
// also writes the row's zero word (ten words to a row). A workgroup per sum, not per row: nine
// chains of soft-float adds side by side finish sooner than one after another.
@compute @workgroup_size(SR_THREADS)
fn row_sums(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sw = params.out_width;
  let k = group.y;
  let y = group.x * SR_ROWS + lid;
  let sums = lid < SR_ROWS && y < params.out_height;
  var v: array<u32, SR_PER>;
  term_words(k, group.x, lid, 0u, &v);
  var acc = 0u;
  for (var c0 = 0u; c0 < sw; c0 = c0 + SR_TILE) {
    workgroupBarrier(); // the previous tile's adds are done
    for (var e = 0u; e < SR_PER; e = e + 1u) {
      let p = sr_place(lid, e);
      tile[sr_word(p.x, p.y)] = v[e];
    }
    workgroupBarrier();
    if (c0 + SR_TILE < sw) {
      term_words(k, group.x, lid, c0 + SR_TILE, &v);
    }
    if (sums) {
      let n = min(SR_TILE, sw - c0);
      for (var c = 0u; c < n; c = c + 1u) {
        acc = f32_add_serial(acc, tile[sr_word(lid, c)]);
      }
    }
  }
  if (sums) {
    let at = params.stats_word + 10u * y;
    stats[at + k] = acc;
    if (k == 0u) {
      stats[at + 9u] = 0u;
    }
  }
}
