// #include "f64.wgsl"
//
// fsum.wgsl: the sequential double sum of float terms, acc = 0.0; acc += (double)t_i, in
// fixed point where that gives the same bits (a few integer adds instead of f64_add each).
//
// Why it is exact: a finite float is t = m 2^e with m an integer, |m| < 2^24 (e = exponent
// field - 150, field 0 read as 1: subnormals are the same form). Let L be the least e of any
// nonzero term's lowest set bit: every term, so every partial sum S_k = t_1 + ... + t_k, is an
// integer K_k times 2^L (L >= -149). If every |K_k| <= 2^53, every S_k is a double (53-bit
// significand; |S_k| >= 2^-149 where nonzero, far above the double's subnormals), so each
// rounded step fl(S_(k-1) + t_k) is exactly S_k, by induction from acc = 0: the double chain
// computes the exact sum, which the fixed point (K in units of 2^L, a 64-bit integer)
// computes too. The check is made on every partial sum (fsum_fits), which is the condition
// itself; a sufficient bound is sum |t_i| < 2^(L+53). Signs of zero: the chain starts at +0
// and x + (-x) and +0 + -0 are +0 to nearest, so a zero sum is +0 either way, and zero terms
// change nothing. Where the check fails (wide exponent spans, infinities or NaNs) the caller
// sums with the f64_add chain instead.
//
// Use: b = FSUM_BOUNDS_EMPTY; b = fsum_bound(b, t_i) over the terms; if fsum_usable(b):
// acc = FSUM_ZERO, ok = true; acc = fsum_add(acc, t_i, b.x); ok = ok && fsum_fits(acc) over
// the terms (any order: integer sums are exact, but the check is made in the chain's order);
// if ok, fsum_to_f64(acc, b.x) is the chain's double.

const FSUM_ZERO: vec2<u32> = vec2<u32>(0u, 0u);
// (least lowest-bit exponent, greatest top exponent): empty.
const FSUM_BOUNDS_EMPTY: vec2<i32> = vec2<i32>(1000, -1000);

// The float t's significand (|m| < 2^24, lowest bit set) and the exponent of its lowest bit;
// .z: 1 where t is not finite.
fn fsum_parts(t: u32) -> vec3<i32> {
  let field = (t >> 23u) & 0xffu;
  var m = t & 0x7fffffu;
  if (field != 0u) {
    m = m | 0x800000u;
  }
  let low = countTrailingZeros(m); // 32 for zero
  let e = i32(max(field, 1u)) - 150 + i32(low);
  return vec3<i32>(i32(m >> min(low, 31u)), e, select(0, 1, field == 255u));
}

// b with the term t: .x the least exponent of a lowest set bit, .y an exponent whose power
// of two exceeds |t| (an infinity or NaN makes .y huge: not usable).
fn fsum_bound(b: vec2<i32>, t: u32) -> vec2<i32> {
  if ((t & 0x7fffffffu) == 0u) {
    return b;
  }
  let p = fsum_parts(t);
  let top = select(p.y + 32 - i32(countLeadingZeros(u32(p.x))), 2000, p.z != 0);
  return vec2<i32>(min(b.x, p.y), max(b.y, top));
}

// Every term fits the 64-bit fixed point with room: |t| < 2^62 units, so a partial sum that
// passed fsum_fits (|K| <= 2^53) plus a term cannot overflow.
fn fsum_usable(b: vec2<i32>) -> bool {
  return b.y - b.x <= 62;
}

// acc + t in units of 2^low (t finite, its lowest bit at or above 2^low).
fn fsum_add(acc: vec2<u32>, t: u32, low: i32) -> vec2<u32> {
  if ((t & 0x7fffffffu) == 0u) {
    return acc;
  }
  let p = fsum_parts(t);
  let v = i64_shl(vec2<u32>(u32(p.x), 0u), u32(p.y - low));
  return select(i64_add(acc, v), i64_sub(acc, v), (t >> 31u) != 0u);
}

// -2^53 <= K < 2^53: the partial sum K 2^low is a double.
fn fsum_fits(acc: vec2<u32>) -> bool {
  let hi = bitcast<i32>(acc.y);
  return hi >= -0x200000 && hi < 0x200000;
}

// The double K 2^low (exact: |K| <= 2^53, and K 2^low is 0 or a normal double).
fn fsum_to_f64(acc: vec2<u32>, low: i32) -> vec2<u32> {
  if (acc.x == 0u && acc.y == 0u) {
    return F64_ZERO;
  }
  let d = f64_from_i64(acc);
  return vec2<u32>(d.x, d.y + bitcast<u32>(low << 20u));
}
