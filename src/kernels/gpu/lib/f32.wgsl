// #include "f64.wgsl"
//
// f32.wgsl: the binary32 operations a C++ float kernel compiled with -ffp-contract=off
// does, bit-exact with x86-64 SSE (round to nearest even, subnormals kept), in integer
// arithmetic only. A float is its bit pattern as a u32.
//
// Why not WGSL's f32: a shader compiler (Tint, then the driver) may contract a * b + c into
// one fused multiply-add (one rounding instead of two), and Vulkan lets an implementation
// flush subnormal inputs and results to zero; either changes last bits. Integer arithmetic
// has neither freedom, so these give the same bits on every adapter.
//
// The float product goes through f64.wgsl: the exact product of two 24-bit significands
// has at most 48 bits and lies between 2^-298 and 2^256, well inside the double's normal
// range, so f64_mul gives it exactly and f32_from_f64 rounds it once: the correctly
// rounded float product, as mulss gives it.

// A double (f64.wgsl's vec2<u32>) rounded to a float, to nearest even, as cvtsd2ss does:
// subnormal results exact, overflow to infinity, a NaN made quiet with the top 22 bits of
// its payload.
fn f32_from_f64(a: vec2<u32>) -> u32 {
  let sign = f64_sign_bit(a) << 31u;
  let e = i32(f64_exp_bits(a));
  let frac = f64_frac_bits(a);
  if (e == 0x7ff) {
    if (frac.x != 0u || frac.y != 0u) {
      return sign | 0x7fc00000u | ((frac.y << 3u) | (frac.x >> 29u));
    }
    return sign | 0x7f800000u;
  }
  if (e == 0) {
    // A double subnormal (< 2^-1022) is far below half the least float subnormal.
    return sign;
  }
  let sig = vec2<u32>(frac.x, frac.y | 0x100000u); // 53 bits, value sig * 2^(e - 1075)
  let fe = e - 1023 + 127; // the float's biased exponent for a normal result
  if (fe >= 255) {
    return sign | 0x7f800000u;
  }
  // Keep 24 bits (normal) or fewer (subnormal: the float exponent is pinned at 1).
  var shift = 29u;
  if (fe < 1) {
    shift = u32(29 + 1 - fe);
  }
  if (shift > 54u) {
    return sign; // below half the least subnormal: rounds to zero
  }
  let kept = u64_shr(sig, shift).x;
  let rest = i64_sub(sig, i64_shl(vec2<u32>(kept, 0u), shift));
  let half = i64_bit(shift - 1u);
  var mant = kept;
  if (u64_gt(rest, half) || (i64_eq(rest, half) && (kept & 1u) == 1u)) {
    mant = mant + 1u;
  }
  // Adding the significand (implicit bit included) onto exponent - 1 lets a rounding carry
  // bump the exponent (up to infinity), and a subnormal rounding up become the least normal.
  if (fe < 1) {
    return sign | mant;
  }
  return sign | ((u32(fe - 1) << 23u) + mant);
}

// The correctly rounded float product a * b (bit patterns), NaN/inf/zero/subnormal as SSE.
fn f32_mul(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_mul(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}

// The correctly rounded float sum a + b (bit patterns), as addss gives it. The sum is taken
// in double and rounded once more to float: with 53 >= 2 * 24 + 2 significand bits that
// second rounding never differs from rounding the exact sum (Figueroa, "When is double
// rounding innocuous?", 1995), and a zero sum gets addss's sign (+0 unless both are -0).
fn f32_add(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_add(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}

// The correctly rounded float difference a - b, as subss gives it (see f32_add).
fn f32_sub(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_sub(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}
