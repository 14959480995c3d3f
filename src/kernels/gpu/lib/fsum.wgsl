// #include "f64.wgsl"
//
// fsum.wgsl: the sequential double sum of float terms, acc = 0.0; acc += (double)t_i, in
// fixed point where that gives the same bits (a few integer operations a term instead of an
// f64_add), in one pass.
//
// Why it is exact: a finite float is t = m 2^e with m an integer, |m| < 2^24 (subnormals are
// the same form, the exponent field 0 read as 1). Take e at t's lowest set bit, and let L_k be
// the least such e over the nonzero terms among t_1..t_k: the partial sum S_k = t_1 + ... + t_k
// is an integer K_k times 2^L_k. If |K_k| <= 2^53 then S_k is a double (53-bit significand;
// L_k >= -149, so a nonzero S_k is far above the double's subnormals and below its overflow),
// and then the rounded step fl(S_(k-1) + t_k) is exactly S_k. So, by induction from acc = 0,
// if every |K_k| <= 2^53, the double chain holds the exact partial sums throughout, and its
// result is K_n 2^L_n, which the fixed point gives: a 64-bit integer K in units of 2^L, L
// lowered (K shifted up) when a term with a lower bit arrives. That check is made at every
// step. It holds wherever every partial sum is within 2^53 units of the least bit of all
// the terms (so where sum |t_i| < 2^(L+53), L that least bit's exponent), and then the
// overflow checks below hold too. Where it fails (wide exponent spans, infinities, NaNs),
// `ok` goes false and the caller sums with the f64_add chain instead. While the sum is 0
// the unit restarts at the next term (S_k = t_k then). Signs of zero: the chain starts at
// +0, and x + (-x) and +0 + -0 are +0 to nearest, so a zero sum is +0 either way, and zero
// terms change nothing.
//
// Use: var s = FSUM_START; s = fsum_add(s, t_i) in the chain's order; if s.ok,
// fsum_to_f64(s) is the chain's double and fsum_to_f32(s) that double rounded to float.

struct FSum {
  acc: vec2<u32>, // K, two's complement, |K| <= 2^53 while ok
  low: i32,       // L
  ok: bool,
  pinned: bool,   // L fixed from the start (fsum_start_at): no restarts
}

const FSUM_START: FSum = FSum(vec2<u32>(0u, 0u), 0, true, false);

// t's lowest set bit's exponent (t finite, nonzero).
fn fsum_low_bit(t: u32) -> i32 {
  let field = (t >> 23u) & 0xffu;
  let m = select(t & 0x7fffffu, (t & 0x7fffffu) | 0x800000u, field != 0u);
  return i32(max(field, 1u)) - 150 + i32(countTrailingZeros(m));
}

// min(low, t's lowest bit) for a nonzero t (a first pass over held terms: then the sum
// never shifts, which is cheaper on SIMD lanes than lowering the unit as terms come).
fn fsum_least(low: i32, t: u32) -> i32 {
  return select(min(low, fsum_low_bit(t)), low, (t & 0x7fffffffu) == 0u);
}

// A sum in units of 2^low fixed (low at most every term's lowest bit: fsum_least over them,
// from 1000).
fn fsum_start_at(low: i32) -> FSum {
  return FSum(vec2<u32>(0u, 0u), low, true, true);
}

// a << n for n < 64 (larger n: some value; callers have gone not ok), without branches
// (lanes of a SIMD group shift by different counts): WGSL takes shift counts modulo 32.
fn fsum_shl(a: vec2<u32>, n: u32) -> vec2<u32> {
  let lo = a.x << n;
  let hi = (a.y << n) | ((a.x >> 1u) >> (31u - (n & 31u)));
  return select(vec2<u32>(lo, hi), vec2<u32>(0u, lo), n >= 32u);
}

// s + t (t a float's bits).
fn fsum_add(s: FSum, t: u32) -> FSum {
  if ((t & 0x7fffffffu) == 0u) {
    return s;
  }
  let field = (t >> 23u) & 0xffu;
  var m = t & 0x7fffffu;
  if (field != 0u) {
    m = m | 0x800000u;
  }
  let tz = countTrailingZeros(m);
  m = m >> tz;                          // odd, < 2^24
  let e = i32(max(field, 1u)) - 150 + i32(tz); // t = +-m 2^e
  var r = s;
  r.ok = r.ok && field != 255u;
  if (!r.pinned && r.acc.x == 0u && r.acc.y == 0u) {
    r.low = e;
  } else if (e < r.low) {
    // K 2^(low - e) must not overflow (|K| has 64 - clz bits): under 2^62, the term (under
    // 2^24 units now) added. Whether the sum is a double is the check below.
    let d = u32(r.low - e);
    let bits = 64u - u64_clz(i64_abs(r.acc));
    r.ok = r.ok && bits + d <= 62u;
    r.acc = fsum_shl(r.acc, d);
    r.low = e;
  }
  // The term in units of 2^low: under 2^62 (with |K| <= 2^53 no overflow), else not ok.
  let up = u32(e - r.low);
  r.ok = r.ok && up + (32u - countLeadingZeros(m)) <= 62u;
  let v = fsum_shl(vec2<u32>(m, 0u), up);
  r.acc = i64_add(r.acc, select(v, i64_neg(v), (t >> 31u) != 0u));
  // -2^53 <= K < 2^53: the partial sum K 2^low is a double.
  let hi = bitcast<i32>(r.acc.y);
  r.ok = r.ok && hi >= -0x200000 && hi < 0x200000;
  return r;
}

// The double K 2^low (exact: |K| <= 2^53, and K 2^low is 0 or a normal double).
fn fsum_to_f64(s: FSum) -> vec2<u32> {
  if (s.acc.x == 0u && s.acc.y == 0u) {
    return F64_ZERO;
  }
  let d = f64_from_i64(s.acc);
  return vec2<u32>(d.x, d.y + bitcast<u32>(s.low << 20u));
}

// The float nearest K 2^low (ties to even), as f32_from_f64(fsum_to_f64(s)) gives it (the
// double is exact, so both round the same number once), without forming the double. A
// result below 2^-126 is a multiple of 2^-149 (low >= -149), so a subnormal exactly.
fn fsum_to_f32(s: FSum) -> u32 {
  if (s.acc.x == 0u && s.acc.y == 0u) {
    return 0u;
  }
  let sign = s.acc.y & 0x80000000u;
  let mag = i64_abs(s.acc);                // <= 2^53
  let b = 64u - u64_clz(mag);              // its bits: 1..54
  let fe = s.low + i32(b) - 1 + 127;       // the float's biased exponent, if normal
  if (fe < 1) {
    return sign | (mag.x << u32(s.low + 149));
  }
  if (fe >= 255) {
    return sign | 0x7f800000u;
  }
  var mant: u32;
  if (b <= 24u) {
    mant = mag.x << (24u - b);
  } else {
    let drop = b - 24u;
    mant = u64_shr(mag, drop).x;
    let rest = i64_sub(mag, i64_shl(vec2<u32>(mant, 0u), drop));
    let half = i64_bit(drop - 1u);
    if (u64_gt(rest, half) || (i64_eq(rest, half) && (mant & 1u) == 1u)) {
      mant = mant + 1u;
    }
  }
  // The significand (implicit bit included) onto exponent - 1: a rounding carry bumps the
  // exponent, up to infinity.
  return sign | ((u32(fe - 1) << 23u) + mant);
}
