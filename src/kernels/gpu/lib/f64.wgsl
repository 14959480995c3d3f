// #include "i64.wgsl"
//
// f64.wgsl: software IEEE-754 binary64 for WGSL, bit-exact with an x86-64 (SSE2) double
// under round-to-nearest-even, without flush-to-zero: subnormal inputs and outputs are
// handled exactly. No WGSL float is used: everything is integer arithmetic on u32, so
// every adapter gives the same bits.
//
// A double is its bit pattern as vec2<u32>: .x = low 32 bits, .y = high 32 bits (sign,
// 11-bit exponent, top 20 fraction bits). Get one from the host with wgsl.ts f64Literal()
// (JS numbers are doubles) or from integers with f64_from_i32 / f64_from_i64 / ...
//
// The algorithms follow John R. Hauser's Berkeley SoftFloat 3e (round-to-nearest-even
// paths, 8086-SSE specialization; BSD-3-Clause): packing with carry into the exponent,
// 10 rounding bits below the 53-bit significand, and division through a 32-bit
// reciprocal approximation plus two 30-bit quotient steps with an exact remainder check.
//
// NaNs follow x86 SSE: an operation with a NaN operand returns the first NaN operand
// (a before b) made quiet; an invalid operation (inf - inf, 0 * inf, 0/0, inf/inf)
// returns the x86 default NaN 0xFFF8000000000000. Conversions to integers truncate toward
// zero like C casts; a NaN or out-of-range value gives the x86 "integer indefinite"
// (INT32_MIN / INT64_MIN), which is what cvttsd2si returns.

const F64_ZERO: vec2<u32> = vec2<u32>(0u, 0u);
const F64_ONE: vec2<u32> = vec2<u32>(0u, 0x3ff00000u);
const F64_DEFAULT_NAN: vec2<u32> = vec2<u32>(0u, 0xfff80000u);

struct F64ExpSig {
  exp: i32,
  sig: vec2<u32>,
}

fn f64_exp_bits(a: vec2<u32>) -> u32 {
  return (a.y >> 20u) & 0x7ffu;
}

fn f64_frac_bits(a: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x, a.y & 0xfffffu);
}

fn f64_sign_bit(a: vec2<u32>) -> u32 {
  return a.y >> 31u;
}

// sign << 63 + exp << 52 + sig, as an add: a significand carrying into bit 53 bumps the
// exponent (and may make infinity), which the rounding code relies on.
fn f64_pack(sign: u32, exp: u32, sig: vec2<u32>) -> vec2<u32> {
  return i64_add(vec2<u32>(0u, (sign << 31u) | (exp << 20u)), sig);
}

fn f64_inf(sign: u32) -> vec2<u32> {
  return vec2<u32>(0u, (sign << 31u) | 0x7ff00000u);
}

fn f64_signed_zero(sign: u32) -> vec2<u32> {
  return vec2<u32>(0u, sign << 31u);
}

fn f64_is_nan(a: vec2<u32>) -> bool {
  let h = a.y & 0x7fffffffu;
  return h > 0x7ff00000u || (h == 0x7ff00000u && a.x != 0u);
}

fn f64_is_inf(a: vec2<u32>) -> bool {
  return (a.y & 0x7fffffffu) == 0x7ff00000u && a.x == 0u;
}

fn f64_is_zero(a: vec2<u32>) -> bool {
  return ((a.y & 0x7fffffffu) | a.x) == 0u;
}

fn f64_neg(a: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x, a.y ^ 0x80000000u);
}

fn f64_abs(a: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x, a.y & 0x7fffffffu);
}

// The first NaN of (a, b), made quiet (x86 SSE propagation).
fn f64_propagate_nan(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, f64_is_nan(a)) | vec2<u32>(0u, 0x00080000u);
}

// Shift right by n, OR-ing every bit shifted out into bit 0 ("jamming"); n >= 63 leaves
// only whether a was nonzero.
fn u64_shr_jam(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) {
    return a;
  }
  if (n < 63u) {
    let r = u64_shr(a, n);
    let lost = i64_shl(a, 64u - n);
    return vec2<u32>(r.x | select(0u, 1u, !i64_is_zero(lost)), r.y);
  }
  return vec2<u32>(select(0u, 1u, !i64_is_zero(a)), 0u);
}

// Normalizes a nonzero subnormal fraction: leading bit to bit 52, exponent to match.
fn f64_norm_subnormal(frac: vec2<u32>) -> F64ExpSig {
  let shift = u64_clz(frac) - 11u;
  return F64ExpSig(1 - i32(shift), i64_shl(frac, shift));
}

// Rounds (to nearest even) and packs. sig < 2^63 holds the significand with its leading
// bit at bit 62 (or lower, for results that end subnormal) and 10 rounding bits below
// the 53 kept ones (any bit lost further down jammed into bit 0); exp is the biased
// exponent minus one. Handles overflow to infinity and underflow to subnormal or zero.
fn f64_round_pack(sign: u32, exp_in: i32, sig_in: vec2<u32>) -> vec2<u32> {
  var e = exp_in;
  var s = sig_in;
  var round_bits = s.x & 0x3ffu;
  if (e < 0 || e >= 0x7fd) {
    if (e < 0) {
      s = u64_shr_jam(s, u32(-e));
      e = 0;
      round_bits = s.x & 0x3ffu;
    } else if (e > 0x7fd || !u64_lt(i64_add_u32(s, 0x200u), vec2<u32>(0u, 0x80000000u))) {
      return f64_inf(sign);
    }
  }
  s = u64_shr(i64_add_u32(s, 0x200u), 10u);
  if (round_bits == 0x200u) {
    s.x = s.x & 0xfffffffeu; // exactly halfway: to even
  }
  if (i64_is_zero(s)) {
    e = 0;
  }
  return f64_pack(sign, u32(e), s);
}

// As f64_round_pack for any nonzero sig (< 2^63): normalizes first.
fn f64_norm_round_pack(sign: u32, exp_in: i32, sig: vec2<u32>) -> vec2<u32> {
  let shift = i32(u64_clz(sig)) - 1;
  let e = exp_in - shift;
  if (shift >= 10 && e >= 0 && e < 0x7fd) {
    return f64_pack(sign, select(0u, u32(e), !i64_is_zero(sig)), i64_shl(sig, u32(shift - 10)));
  }
  return f64_round_pack(sign, e, i64_shl(sig, u32(shift)));
}

// ---- conversions from integers ------------------------------------------------------

// (double)a for int32_t a: exact.
fn f64_from_i32(a: i32) -> vec2<u32> {
  if (a == 0) {
    return F64_ZERO;
  }
  let sign = select(0u, 1u, a < 0);
  let mag = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0);
  let shift = countLeadingZeros(mag) + 21u;
  return f64_pack(sign, 0x432u - shift, i64_shl(vec2<u32>(mag, 0u), shift));
}

// (double)a for uint32_t a: exact.
fn f64_from_u32(a: u32) -> vec2<u32> {
  if (a == 0u) {
    return F64_ZERO;
  }
  let shift = countLeadingZeros(a) + 21u;
  return f64_pack(0u, 0x432u - shift, i64_shl(vec2<u32>(a, 0u), shift));
}

// (double)a for int64_t a: rounded to nearest even where |a| > 2^53.
fn f64_from_i64(a: vec2<u32>) -> vec2<u32> {
  let sign = a.y >> 31u;
  if ((a.y & 0x7fffffffu) == 0u && a.x == 0u) {
    return select(F64_ZERO, vec2<u32>(0u, 0xc3e00000u), sign == 1u); // 0 or -2^63
  }
  let mag = select(a, i64_neg(a), sign == 1u);
  return f64_norm_round_pack(sign, 0x43c, mag);
}

// (double)a for uint64_t a: rounded to nearest even where a > 2^53.
fn f64_from_u64(a: vec2<u32>) -> vec2<u32> {
  if (i64_is_zero(a)) {
    return F64_ZERO;
  }
  if ((a.y & 0x80000000u) != 0u) {
    return f64_round_pack(0u, 0x43d, u64_shr_jam(a, 1u));
  }
  return f64_norm_round_pack(0u, 0x43c, a);
}

// (double)f for the float whose bits are f: exact (a signaling NaN comes back quiet).
fn f64_from_f32_bits(f: u32) -> vec2<u32> {
  let sign = f >> 31u;
  var exp = i32((f >> 23u) & 0xffu);
  var frac = f & 0x7fffffu;
  if (exp == 0xff) {
    if (frac != 0u) {
      return vec2<u32>(frac << 29u, (sign << 31u) | 0x7ff80000u | (frac >> 3u));
    }
    return f64_inf(sign);
  }
  if (exp == 0) {
    if (frac == 0u) {
      return f64_signed_zero(sign);
    }
    let shift = countLeadingZeros(frac) - 8u;
    exp = 1 - i32(shift) - 1;
    frac = frac << shift;
  }
  return f64_pack(sign, u32(exp + 0x380), i64_shl(vec2<u32>(frac, 0u), 29u));
}

// ---- conversions to integers (C casts: truncation toward zero) ---------------------

// (int32_t)a; NaN or out of range gives INT32_MIN (x86 cvttsd2si).
fn f64_to_i32(a: vec2<u32>) -> i32 {
  let exp = i32(f64_exp_bits(a));
  let shift = 0x433 - exp;
  if (shift >= 53) {
    return 0; // |a| < 1
  }
  if (shift < 22) {
    return bitcast<i32>(0x80000000u); // |a| >= 2^31 (exactly -2^31 lands here too), inf, NaN
  }
  let sig = vec2<u32>(a.x, (a.y & 0xfffffu) | 0x100000u);
  let mag = bitcast<i32>(u64_shr(sig, u32(shift)).x); // < 2^31
  return select(mag, -mag, (a.y >> 31u) == 1u);
}

// (int64_t)a; NaN or out of range gives INT64_MIN (x86 cvttsd2si).
fn f64_to_i64(a: vec2<u32>) -> vec2<u32> {
  let exp = i32(f64_exp_bits(a));
  let shift = 0x433 - exp;
  let sig = vec2<u32>(a.x, (a.y & 0xfffffu) | 0x100000u);
  var mag: vec2<u32>;
  if (shift <= 0) {
    if (shift < -10) {
      return vec2<u32>(0u, 0x80000000u); // |a| >= 2^63, inf, NaN
    }
    mag = i64_shl(sig, u32(-shift));
  } else {
    if (shift >= 53) {
      return vec2<u32>(0u, 0u);
    }
    mag = u64_shr(sig, u32(shift));
  }
  return select(mag, i64_neg(mag), (a.y >> 31u) == 1u);
}

// (uint32_t)a as x86-64 GCC/Clang compile it (64-bit cvttsd2si, low 32 bits kept): exact
// for 0 <= a < 2^32, modular for negatives down to -2^63.
fn f64_to_u32(a: vec2<u32>) -> u32 {
  return f64_to_i64(a).x;
}

// ---- comparisons (IEEE: NaN compares false; -0 == +0) -------------------------------

fn f64_eq(a: vec2<u32>, b: vec2<u32>) -> bool {
  if (f64_is_nan(a) || f64_is_nan(b)) {
    return false;
  }
  return (a.x == b.x && a.y == b.y) || (((a.y | b.y) & 0x7fffffffu) | a.x | b.x) == 0u;
}

fn f64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  if (f64_is_nan(a) || f64_is_nan(b)) {
    return false;
  }
  let sa = (a.y >> 31u) == 1u;
  let sb = (b.y >> 31u) == 1u;
  if (sa != sb) {
    return sa && (((a.y | b.y) & 0x7fffffffu) | a.x | b.x) != 0u;
  }
  return !(a.x == b.x && a.y == b.y) && (sa != u64_lt(a, b));
}

fn f64_le(a: vec2<u32>, b: vec2<u32>) -> bool {
  if (f64_is_nan(a) || f64_is_nan(b)) {
    return false;
  }
  let sa = (a.y >> 31u) == 1u;
  let sb = (b.y >> 31u) == 1u;
  if (sa != sb) {
    return sa || (((a.y | b.y) & 0x7fffffffu) | a.x | b.x) == 0u;
  }
  return (a.x == b.x && a.y == b.y) || (sa != u64_lt(a, b));
}

fn f64_gt(a: vec2<u32>, b: vec2<u32>) -> bool {
  return f64_lt(b, a);
}

fn f64_ge(a: vec2<u32>, b: vec2<u32>) -> bool {
  return f64_le(b, a);
}

// C's MIN(a, b) macro, ((a) < (b) ? (a) : (b)), as libvmaf writes it: NaN or equal gives b.
fn f64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, f64_lt(a, b));
}

// C's MAX(a, b) macro, ((a) > (b) ? (a) : (b)).
fn f64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, f64_gt(a, b));
}

// ---- add / sub ----------------------------------------------------------------------

// |a| + |b| with result sign sign_z.
fn f64_add_mags(a: vec2<u32>, b: vec2<u32>, sign_z: u32) -> vec2<u32> {
  let exp_a = i32(f64_exp_bits(a));
  let exp_b = i32(f64_exp_bits(b));
  var sig_a = f64_frac_bits(a);
  var sig_b = f64_frac_bits(b);
  let exp_diff = exp_a - exp_b;
  var exp_z: i32;
  var sig_z: vec2<u32>;
  if (exp_diff == 0) {
    if (exp_a == 0) {
      return i64_add(a, sig_b); // both subnormal (or zero): may carry into the exponent
    }
    if (exp_a == 0x7ff) {
      if (!i64_is_zero(sig_a | sig_b)) {
        return f64_propagate_nan(a, b);
      }
      return a;
    }
    exp_z = exp_a;
    sig_z = i64_shl(i64_add(i64_add(vec2<u32>(0u, 0x00200000u), sig_a), sig_b), 9u);
  } else {
    sig_a = i64_shl(sig_a, 9u);
    sig_b = i64_shl(sig_b, 9u);
    if (exp_diff < 0) {
      if (exp_b == 0x7ff) {
        if (!i64_is_zero(sig_b)) {
          return f64_propagate_nan(a, b);
        }
        return f64_inf(sign_z);
      }
      exp_z = exp_b;
      if (exp_a != 0) {
        sig_a = i64_add(sig_a, vec2<u32>(0u, 0x20000000u));
      } else {
        sig_a = i64_shl(sig_a, 1u);
      }
      sig_a = u64_shr_jam(sig_a, u32(-exp_diff));
    } else {
      if (exp_a == 0x7ff) {
        if (!i64_is_zero(sig_a)) {
          return f64_propagate_nan(a, b);
        }
        return a;
      }
      exp_z = exp_a;
      if (exp_b != 0) {
        sig_b = i64_add(sig_b, vec2<u32>(0u, 0x20000000u));
      } else {
        sig_b = i64_shl(sig_b, 1u);
      }
      sig_b = u64_shr_jam(sig_b, u32(exp_diff));
    }
    sig_z = i64_add(i64_add(vec2<u32>(0u, 0x20000000u), sig_a), sig_b);
    if (sig_z.y < 0x40000000u) {
      exp_z = exp_z - 1;
      sig_z = i64_shl(sig_z, 1u);
    }
  }
  return f64_round_pack(sign_z, exp_z, sig_z);
}

// |a| - |b| with sign_z the sign of a.
fn f64_sub_mags(a: vec2<u32>, b: vec2<u32>, sign_in: u32) -> vec2<u32> {
  var sign_z = sign_in;
  var exp_a = i32(f64_exp_bits(a));
  let exp_b = i32(f64_exp_bits(b));
  var sig_a = f64_frac_bits(a);
  var sig_b = f64_frac_bits(b);
  let exp_diff = exp_a - exp_b;
  if (exp_diff == 0) {
    if (exp_a == 0x7ff) {
      if (!i64_is_zero(sig_a | sig_b)) {
        return f64_propagate_nan(a, b);
      }
      return F64_DEFAULT_NAN; // inf - inf
    }
    var sig_diff = i64_sub(sig_a, sig_b);
    if (i64_is_zero(sig_diff)) {
      return F64_ZERO; // exact zero is +0 when rounding to nearest
    }
    if (exp_a != 0) {
      exp_a = exp_a - 1;
    }
    if (i64_is_neg(sig_diff)) {
      sign_z = sign_z ^ 1u;
      sig_diff = i64_neg(sig_diff);
    }
    var shift = i32(u64_clz(sig_diff)) - 11;
    var exp_z = exp_a - shift;
    if (exp_z < 0) {
      shift = exp_a;
      exp_z = 0;
    }
    return f64_pack(sign_z, u32(exp_z), i64_shl(sig_diff, u32(shift)));
  }
  sig_a = i64_shl(sig_a, 10u);
  sig_b = i64_shl(sig_b, 10u);
  var exp_z: i32;
  var sig_z: vec2<u32>;
  if (exp_diff < 0) {
    sign_z = sign_z ^ 1u;
    if (exp_b == 0x7ff) {
      if (!i64_is_zero(sig_b)) {
        return f64_propagate_nan(a, b);
      }
      return f64_inf(sign_z);
    }
    sig_a = i64_add(sig_a, select(sig_a, vec2<u32>(0u, 0x40000000u), exp_a != 0));
    sig_a = u64_shr_jam(sig_a, u32(-exp_diff));
    sig_b = sig_b | vec2<u32>(0u, 0x40000000u);
    exp_z = exp_b;
    sig_z = i64_sub(sig_b, sig_a);
  } else {
    if (exp_a == 0x7ff) {
      if (!i64_is_zero(sig_a)) {
        return f64_propagate_nan(a, b);
      }
      return a;
    }
    sig_b = i64_add(sig_b, select(sig_b, vec2<u32>(0u, 0x40000000u), exp_b != 0));
    sig_b = u64_shr_jam(sig_b, u32(exp_diff));
    sig_a = sig_a | vec2<u32>(0u, 0x40000000u);
    exp_z = exp_a;
    sig_z = i64_sub(sig_a, sig_b);
  }
  return f64_norm_round_pack(sign_z, exp_z - 1, sig_z);
}

// a + b
fn f64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let sign_a = a.y >> 31u;
  if (sign_a == (b.y >> 31u)) {
    return f64_add_mags(a, b, sign_a);
  }
  return f64_sub_mags(a, b, sign_a);
}

// a - b
fn f64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let sign_a = a.y >> 31u;
  if (sign_a == (b.y >> 31u)) {
    return f64_sub_mags(a, b, sign_a);
  }
  return f64_add_mags(a, b, sign_a);
}

// ---- mul ----------------------------------------------------------------------------

// a * b
fn f64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let sign_z = (a.y ^ b.y) >> 31u;
  var exp_a = i32(f64_exp_bits(a));
  var exp_b = i32(f64_exp_bits(b));
  var sig_a = f64_frac_bits(a);
  var sig_b = f64_frac_bits(b);
  if (exp_a == 0x7ff) {
    if (!i64_is_zero(sig_a) || (exp_b == 0x7ff && !i64_is_zero(sig_b))) {
      return f64_propagate_nan(a, b);
    }
    if (exp_b == 0 && i64_is_zero(sig_b)) {
      return F64_DEFAULT_NAN; // inf * 0
    }
    return f64_inf(sign_z);
  }
  if (exp_b == 0x7ff) {
    if (!i64_is_zero(sig_b)) {
      return f64_propagate_nan(a, b);
    }
    if (exp_a == 0 && i64_is_zero(sig_a)) {
      return F64_DEFAULT_NAN; // 0 * inf
    }
    return f64_inf(sign_z);
  }
  if (exp_a == 0) {
    if (i64_is_zero(sig_a)) {
      return f64_signed_zero(sign_z);
    }
    let n = f64_norm_subnormal(sig_a);
    exp_a = n.exp;
    sig_a = n.sig;
  }
  if (exp_b == 0) {
    if (i64_is_zero(sig_b)) {
      return f64_signed_zero(sign_z);
    }
    let n = f64_norm_subnormal(sig_b);
    exp_b = n.exp;
    sig_b = n.sig;
  }
  var exp_z = exp_a + exp_b - 0x3ff;
  sig_a = i64_shl(sig_a | vec2<u32>(0u, 0x00100000u), 10u);
  sig_b = i64_shl(sig_b | vec2<u32>(0u, 0x00100000u), 11u);
  let p = u64_mul_128(sig_a, sig_b);
  var sig_z = vec2<u32>(p.z | select(0u, 1u, (p.x | p.y) != 0u), p.w);
  if (sig_z.y < 0x40000000u) {
    exp_z = exp_z - 1;
    sig_z = i64_shl(sig_z, 1u);
  }
  return f64_round_pack(sign_z, exp_z, sig_z);
}

// ---- div ----------------------------------------------------------------------------

// SoftFloat's 16-entry table for the reciprocal's first approximation, each entry
// (k0 << 16) | k1, chosen with a branchless select tree (no indexed array, so no local
// memory on GPUs).
fn f64_recip_table(i: u32) -> u32 {
  let b0 = (i & 1u) != 0u;
  let b1 = (i & 2u) != 0u;
  let b2 = (i & 4u) != 0u;
  let b3 = (i & 8u) != 0u;
  let l0 = select(0xffc4f0f1u, 0xf0bed62cu, b0);
  let l1 = select(0xe363bfa1u, 0xd76fac77u, b0);
  let l2 = select(0xccad9c0au, 0xc2f08ddbu, b0);
  let l3 = select(0xba168185u, 0xb20176bau, b0);
  let l4 = select(0xaa976d3bu, 0xa3c664d4u, b0);
  let l5 = select(0x9d7a5d5cu, 0x97a656b1u, b0);
  let l6 = select(0x923c50b6u, 0x8d324b55u, b0);
  let l7 = select(0x887e4679u, 0x84174211u, b0);
  let m0 = select(l0, l1, b1);
  let m1 = select(l2, l3, b1);
  let m2 = select(l4, l5, b1);
  let m3 = select(l6, l7, b1);
  return select(select(m0, m1, b2), select(m2, m3, b2), b3);
}

// For a = A * 2^31 with 1 <= A < 2 (bit 31 set): floor-side approximation of 2^32 / A,
// never above the true reciprocal and within 2.006 units of it (SoftFloat
// softfloat_approxRecip32_1).
fn f64_approx_recip32(a: u32) -> u32 {
  let t = f64_recip_table((a >> 27u) & 0xfu);
  let eps = (a >> 11u) & 0xffffu;
  let r0 = ((t >> 16u) - (((t & 0xffffu) * eps) >> 20u)) & 0xffffu;
  let p = u64_mul_u32_u32(r0, a);
  let sigma0 = ~((p.x >> 7u) | (p.y << 25u));
  let q = u64_mul_u32_u32(r0, sigma0);
  let r = (r0 << 16u) + ((q.x >> 24u) | (q.y << 8u));
  let sqr_sigma0 = u32_mul_hi(sigma0, sigma0);
  return r + (u32_mul_hi(r, sqr_sigma0) >> 16u);
}

// a / b
fn f64_div(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let sign_z = (a.y ^ b.y) >> 31u;
  var exp_a = i32(f64_exp_bits(a));
  var exp_b = i32(f64_exp_bits(b));
  var sig_a = f64_frac_bits(a);
  var sig_b = f64_frac_bits(b);
  if (exp_a == 0x7ff) {
    if (!i64_is_zero(sig_a)) {
      return f64_propagate_nan(a, b);
    }
    if (exp_b == 0x7ff) {
      if (!i64_is_zero(sig_b)) {
        return f64_propagate_nan(a, b);
      }
      return F64_DEFAULT_NAN; // inf / inf
    }
    return f64_inf(sign_z);
  }
  if (exp_b == 0x7ff) {
    if (!i64_is_zero(sig_b)) {
      return f64_propagate_nan(a, b);
    }
    return f64_signed_zero(sign_z);
  }
  if (exp_b == 0) {
    if (i64_is_zero(sig_b)) {
      if (exp_a == 0 && i64_is_zero(sig_a)) {
        return F64_DEFAULT_NAN; // 0 / 0
      }
      return f64_inf(sign_z);
    }
    let n = f64_norm_subnormal(sig_b);
    exp_b = n.exp;
    sig_b = n.sig;
  }
  if (exp_a == 0) {
    if (i64_is_zero(sig_a)) {
      return f64_signed_zero(sign_z);
    }
    let n = f64_norm_subnormal(sig_a);
    exp_a = n.exp;
    sig_a = n.sig;
  }
  var exp_z = exp_a - exp_b + 0x3fe;
  sig_a = sig_a | vec2<u32>(0u, 0x00100000u);
  sig_b = sig_b | vec2<u32>(0u, 0x00100000u);
  if (u64_lt(sig_a, sig_b)) {
    exp_z = exp_z - 1;
    sig_a = i64_shl(sig_a, 11u);
  } else {
    sig_a = i64_shl(sig_a, 10u);
  }
  sig_b = i64_shl(sig_b, 11u);
  let recip32 = f64_approx_recip32(sig_b.y) - 2u;
  let sig32_z = u32_mul_hi(sig_a.y, recip32);
  var double_term = sig32_z << 1u;
  var rem = i64_sub(
    i64_shl(i64_sub(sig_a, u64_mul_u32_u32(double_term, sig_b.y)), 28u),
    u64_mul_u32_u32(double_term, sig_b.x >> 4u));
  var q = u32_mul_hi(rem.y, recip32) + 4u;
  var sig_z = i64_add(vec2<u32>(0u, sig32_z), i64_shl(vec2<u32>(q, 0u), 4u));
  if ((sig_z.x & 0x1ffu) < 0x40u) {
    // Too close to a rounding boundary to trust: settle the last digit with the exact
    // remainder.
    q = q & 0xfffffff8u;
    sig_z.x = sig_z.x & 0xffffff80u;
    double_term = q << 1u;
    rem = i64_sub(
      i64_shl(i64_sub(rem, u64_mul_u32_u32(double_term, sig_b.y)), 28u),
      u64_mul_u32_u32(double_term, sig_b.x >> 4u));
    if (i64_is_neg(rem)) {
      sig_z = i64_sub(sig_z, vec2<u32>(0x80u, 0u));
    } else if (!i64_is_zero(rem)) {
      sig_z.x = sig_z.x | 1u;
    }
  }
  return f64_round_pack(sign_z, exp_z, sig_z);
}
