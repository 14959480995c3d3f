// #include "../lib/i64.wgsl"
//
// adm-angle.wgsl (library): ADM's decouple angle test, exactly as the cpu backend (and
// libvmaf) evaluates it in binary32/binary64, reproduced in integer arithmetic.
//
// The C++ expression (src/kernels/cpu/adm.cpp, angleRow; no FMA, -ffp-contract=off):
//   D = f64(f32(dot)) / 4096, O = f64(f32(om)) / 4096, T = f64(f32(tm)) / 4096
//   angle = D >= 0 && D * D >= (c * O) * T,   c = f64(0x1.ffd814p-1f) = 0xffec0a * 2^-24
// with dot = oh*th + ov*tv, om = oh^2 + ov^2, tm = th^2 + tv^2 as int64.
//
// Why integers reproduce it: f32(x) is x rounded to a 24-bit significand (nearest, ties to
// even): (m, e) with x ~ m * 2^e. D*D is exact in binary64 (48-bit product) and so is c*O
// (24 x 24 bits); only the last product (c*O)*T rounds, from at most 72 bits to 53 (again
// nearest-even). The divisions by 4096 are exact power-of-two scalings (no value comes near
// the binary64 range limits), so after multiplying both sides by 2^24:
//   LHS = md^2 * 2^(2 ed),   RHS = round53(0xffec0a * mo * mt) * 2^(eo + et - 24)
// and the test is an exact comparison of those two integers-times-powers-of-two.

const ADM_COS1_SQ_MANT: u32 = 0xffec0au; // cos(1 deg)^2 as a binary32: 0xffec0a * 2^-24

// Rounds a u64 magnitude to a binary32 significand: (m, e) with value m * 2^e, m < 2^24
// (2^23 <= m when the value is >= 2^24), round to nearest, ties to even.
fn adm_f32_round(x: vec2<u32>) -> vec2<u32> {
  let n = 64u - u64_clz(x); // bit length, 0..64
  if (n <= 24u) {
    return vec2<u32>(x.x, 0u);
  }
  let k = n - 24u; // 1..40 bits dropped
  var m = u64_shr(x, k).x;
  let round_bit = u64_shr(x, k - 1u).x & 1u;
  let below = x & i64_sub(i64_bit(k - 1u), vec2<u32>(1u, 0u)); // bits under the round bit
  var e = k;
  if (round_bit == 1u && ((below.x | below.y) != 0u || (m & 1u) == 1u)) {
    m = m + 1u;
    if (m == 0x1000000u) {
      m = 0x800000u;
      e = e + 1u;
    }
  }
  return vec2<u32>(m, e);
}

// The same rounding for a u32 (scale 0's dot product and magnitudes fit 32 bits).
fn adm_f32_round32(x: u32) -> vec2<u32> {
  let n = 32u - countLeadingZeros(x);
  if (n <= 24u) {
    return vec2<u32>(x, 0u);
  }
  let k = n - 24u; // 1..8
  var m = x >> k;
  let round_bit = (x >> (k - 1u)) & 1u;
  let below = x & ((1u << (k - 1u)) - 1u);
  var e = k;
  if (round_bit == 1u && (below != 0u || (m & 1u) == 1u)) {
    m = m + 1u;
    if (m == 0x1000000u) {
      m = 0x800000u;
      e = e + 1u;
    }
  }
  return vec2<u32>(m, e);
}

// The comparison D*D >= (c*O)*T of the binary32-rounded values d = f32(dot) >= 0,
// o = f32(om), t = f32(tm) given as (significand, exponent) magnitudes, with the signs of
// O and T (only a wrapped int64 sum makes them negative).
fn adm_angle_rounded(d: vec2<u32>, o: vec2<u32>, t: vec2<u32>, o_neg: bool, t_neg: bool) -> bool {
  if (o.x == 0u || t.x == 0u) {
    return true; // RHS is +-0 and LHS >= 0
  }
  if (o_neg != t_neg) {
    return true; // RHS < 0 <= LHS
  }
  if (d.x == 0u) {
    return false; // 0 >= RHS > 0 is false
  }
  // LHS = a * 2^ae, a = md^2 < 2^48.
  let a = u64_mul_u32_u32(d.x, d.x);
  let ae = i32(2u * d.y);
  // P = mc * mo * mt < 2^72, as words (w0, w1, w2).
  let p = u64_mul_u32_u32(ADM_COS1_SQ_MANT, o.x); // < 2^48: p.y < 2^16
  let lo = u64_mul_u32_u32(p.x, t.x);               // < 2^56
  let hi = u64_mul_u32_u32(p.y, t.x);               // < 2^40, weight 2^32
  let mid = i64_add(vec2<u32>(lo.y, 0u), hi);       // < 2^41
  let w0 = lo.x;
  let w1 = mid.x;
  let w2 = mid.y;
  var n: u32;
  if (w2 != 0u) {
    n = 96u - countLeadingZeros(w2);
  } else if (w1 != 0u) {
    n = 64u - countLeadingZeros(w1);
  } else {
    n = 32u - countLeadingZeros(w0);
  }
  // RHS = b * 2^be, b = round53(P) (up to 2^53 after a carry).
  var b = vec2<u32>(w0, w1);
  var be = i32(o.y + t.y) - 24;
  if (n > 53u) {
    let k = n - 53u; // 1..19
    b = vec2<u32>((w0 >> k) | (w1 << (32u - k)), (w1 >> k) | (w2 << (32u - k)));
    let rem = w0 & ((1u << k) - 1u);
    let half = 1u << (k - 1u);
    if (rem > half || (rem == half && (b.x & 1u) == 1u)) {
      b = i64_add_u32(b, 1u);
    }
    be = be + i32(k);
  }
  // a * 2^ae >= b * 2^be, with 0 < a, b < 2^54: compare the top bit positions, and when
  // they are equal align the exponents (the shifted value then still fits 54 bits).
  let ta = i32(64u - u64_clz(a)) + ae;
  let tb = i32(64u - u64_clz(b)) + be;
  if (ta != tb) {
    return ta > tb;
  }
  if (ae >= be) {
    return u64_ge(i64_shl(a, u32(ae - be)), b);
  }
  return u64_ge(a, i64_shl(b, u32(be - ae)));
}

// The angle flag from the exact int64 dot product and squared magnitudes (two's complement
// vec2<u32>; om and tm are >= 0 unless the int64 sums wrapped, which is handled too).
fn adm_angle(dot: vec2<u32>, om: vec2<u32>, tm: vec2<u32>) -> bool {
  if (i64_is_neg(dot)) {
    return false; // D < 0
  }
  return adm_angle_rounded(adm_f32_round(dot), adm_f32_round(i64_abs(om)), adm_f32_round(i64_abs(tm)),
                           i64_is_neg(om), i64_is_neg(tm));
}

// The angle flag of ref (oh, ov) against dis (th, tv), any i32 band values (scales 1..3).
fn adm_angle_i32(oh: i32, ov: i32, th: i32, tv: i32) -> bool {
  let dot = i64_add(i64_mul_i32_i32(oh, th), i64_mul_i32_i32(ov, tv));
  let om = i64_add(i64_mul_i32_i32(oh, oh), i64_mul_i32_i32(ov, ov));
  let tm = i64_add(i64_mul_i32_i32(th, th), i64_mul_i32_i32(tv, tv));
  return adm_angle(dot, om, tm);
}

// The same for int16 band values (scale 0): each product fits i32 (|p| <= 2^30), the
// squared magnitudes fit u32 (<= 2^31) and so does |dot| (<= 2^31).
fn adm_angle_i16(oh: i32, ov: i32, th: i32, tv: i32) -> bool {
  let p = oh * th;
  let q = ov * tv;
  // dot = p + q >= 0 <=> q >= -p (no overflow: |p|, |q| <= 2^30)
  if (q < -p) {
    return false;
  }
  let dot = u32(p) + u32(q); // the exact value, 0 .. 2^31
  let om = u32(oh * oh) + u32(ov * ov);
  let tm = u32(th * th) + u32(tv * tv);
  return adm_angle_rounded(adm_f32_round32(dot), adm_f32_round32(om), adm_f32_round32(tm), false, false);
}
