// #include "adm-common.wgsl"
// #include "../lib/f64.wgsl"
//
// adm-decouple.wgsl (library): ADM's decouple step (adm.h "Decouple") for the two DWT
// passes, at two enhancement gain limits per position (the kernel's variants 0 and 1; with
// ADM_TWO_VARIANTS false, adm-variants.wgsl, at variant 0's alone).
//
// A gain limit g is a vec4<u32> the host derives from adm_enhn_gain_limit (adm-kernel.ts
// gainWords): (1, g, -, -) for an integral g, applied in integers as libvmaf's int32/int64
// arithmetic does; (0, -, lo, hi) for any other g, whose binary64 bits (lo, hi) are used as
// libvmaf uses the double: rst * g rounded to binary64, then min (max for o < 0) with t, then
// truncated toward zero (f64.wgsl, integer arithmetic only). ADM_GAIN_F64 (a pipeline
// constant) is set only where a kernel has a non-integral limit: elsewhere the binary64 path
// is dead code the compiler drops.

override ADM_GAIN_F64: bool = false;

// The gain-limited restored value of a position where the angle test passed, k > 0 and
// o != 0: o > 0: min(rst g, t), o < 0: max(rst g, t), as an int32 (it always fits: it lies
// between rst and t).
fn adm_gain_limit(rst: i32, o: i32, t: i32, g: vec4<u32>) -> i32 {
  if (!ADM_GAIN_F64 || g.x != 0u) {
    // rst * 100 can pass 2^31 at scales 1..3
    let gr = i64_mul_i32_i32(rst, bitcast<i32>(g.y));
    let t64 = i64_from_i32(t);
    return i64_to_i32(select(i64_max(gr, t64), i64_min(gr, t64), o > 0));
  }
  let gr = f64_mul(f64_from_i32(rst), g.zw);
  let tt = f64_from_i32(t);
  // std::min(gr, tt) is (tt < gr ? tt : gr); std::max(gr, tt) is (gr < tt ? tt : gr).
  var take_t: bool;
  if (o > 0) {
    take_t = f64_lt(tt, gr);
  } else {
    take_t = f64_lt(gr, tt);
  }
  return select(f64_to_i32(gr), t, take_t);
}

// Decouple of one band at scale 0: the restored coefficients of both variants (int16).
fn adm_decouple0(o: i32, t: i32, angle: bool, g0: vec4<u32>, g1: vec4<u32>) -> vec2<i32> {
  var k = 32768;
  if (o != 0) {
    // clamp((R(o) * t + 16384) >> 15, 0, 32768) in int32: with R = Rh 2^15 + Rl,
    // Rl in [0, 2^15), it is Rh t + ((Rl t + 16384) >> 15); |Rh t|, Rl t < 2^30.
    let r = adm_recip(o);
    k = clamp((r >> 15u) * t + (((r & 0x7fff) * t + 16384) >> 15u), 0, 32768);
  }
  let rst = (k * o + 16384) >> 15u; // |k * o| <= 2^30
  if (!(angle && k > 0 && o != 0)) {
    return vec2<i32>(i16c(rst));
  }
  let r0 = i16c(adm_gain_limit(rst, o, t, g0));
  if (!ADM_TWO_VARIANTS) {
    return vec2<i32>(r0); // variant 1 not computed
  }
  return vec2<i32>(r0, i16c(adm_gain_limit(rst, o, t, g1)));
}

// Decouple of one band at scales 1..3: the restored coefficients of both variants.
fn adm_decouple(o: i32, t: i32, angle: bool, g0: vec4<u32>, g1: vec4<u32>) -> vec2<i32> {
  let k = adm_gain(o, t);
  let rst = i64_to_i32(i64_shr(i64_add_u32(i64_mul_i32_i32(k, o), 16384u), 15u));
  if (!(angle && k > 0 && o != 0)) {
    return vec2<i32>(rst);
  }
  let r0 = adm_gain_limit(rst, o, t, g0);
  if (!ADM_TWO_VARIANTS) {
    return vec2<i32>(r0); // variant 1 not computed
  }
  return vec2<i32>(r0, adm_gain_limit(rst, o, t, g1));
}
