// i64.wgsl: exact 64-bit integer arithmetic for WGSL, which has no 64-bit integers.
//
// A 64-bit value is a vec2<u32>: .x holds the low 32 bits, .y the high 32 bits. Signed
// values (i64_*) are two's complement, unsigned values (u64_*) plain binary; the same
// bits serve both, as int64_t and uint64_t do in C. Every operation is exact modulo 2^64,
// like C's unsigned arithmetic (and like int64_t where C would not overflow): each add
// carries from the low half into the high half at once; halves are never reduced apart.
//
// Only integer operations on u32/i32 are used, so the results are the same on every
// adapter. Shift counts are u32; counts of 64 or more are defined here (see each shift).
//
// Naming: i64_* treat the value as signed, u64_* as unsigned; where the two agree (add,
// sub, mul, shl, eq) only i64_* exists. Constants are written vec2<u32>(lo, hi).

fn i64_from_i32(a: i32) -> vec2<u32> {
  return vec2<u32>(bitcast<u32>(a), bitcast<u32>(a >> 31u));
}

fn i64_from_u32(a: u32) -> vec2<u32> {
  return vec2<u32>(a, 0u);
}

// Low 32 bits as i32 (C's (int32_t) conversion, modular).
fn i64_to_i32(a: vec2<u32>) -> i32 {
  return bitcast<i32>(a.x);
}

fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let lo = a.x + b.x;
  return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}

fn i64_neg(a: vec2<u32>) -> vec2<u32> {
  return i64_sub(vec2<u32>(0u, 0u), a);
}

fn i64_add_i32(a: vec2<u32>, b: i32) -> vec2<u32> {
  return i64_add(a, i64_from_i32(b));
}

fn i64_add_u32(a: vec2<u32>, b: u32) -> vec2<u32> {
  let lo = a.x + b;
  return vec2<u32>(lo, a.y + select(0u, 1u, lo < b));
}

fn i64_is_neg(a: vec2<u32>) -> bool {
  return (a.y & 0x80000000u) != 0u;
}

fn i64_is_zero(a: vec2<u32>) -> bool {
  return (a.x | a.y) == 0u;
}

fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.x == b.x && a.y == b.y;
}

fn i64_ne(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.x != b.x || a.y != b.y;
}

// Signed comparisons.
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  let ah = bitcast<i32>(a.y);
  let bh = bitcast<i32>(b.y);
  return ah < bh || (ah == bh && a.x < b.x);
}

fn i64_le(a: vec2<u32>, b: vec2<u32>) -> bool {
  return !i64_lt(b, a);
}

fn i64_gt(a: vec2<u32>, b: vec2<u32>) -> bool {
  return i64_lt(b, a);
}

fn i64_ge(a: vec2<u32>, b: vec2<u32>) -> bool {
  return !i64_lt(a, b);
}

// Unsigned comparisons.
fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn u64_le(a: vec2<u32>, b: vec2<u32>) -> bool {
  return !u64_lt(b, a);
}

fn u64_gt(a: vec2<u32>, b: vec2<u32>) -> bool {
  return u64_lt(b, a);
}

fn u64_ge(a: vec2<u32>, b: vec2<u32>) -> bool {
  return !u64_lt(a, b);
}

fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, i64_lt(a, b));
}

fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, i64_gt(a, b));
}

fn u64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, u64_lt(a, b));
}

fn u64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return select(b, a, u64_gt(a, b));
}

// |a|; i64_abs(INT64_MIN) is INT64_MIN (as in C on two's complement machines).
fn i64_abs(a: vec2<u32>) -> vec2<u32> {
  return select(a, i64_neg(a), i64_is_neg(a));
}

// Logical shift right by n: n = 0..63; n >= 64 gives 0.
fn u64_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) {
    return a;
  }
  if (n < 32u) {
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
  }
  if (n < 64u) {
    return vec2<u32>(a.y >> (n - 32u), 0u);
  }
  return vec2<u32>(0u, 0u);
}

// Arithmetic shift right by n (C's >> on int64_t, rounds toward minus infinity):
// n = 0..63; n >= 64 gives 0 or -1 by the sign.
fn i64_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
  let hi = bitcast<i32>(a.y);
  let fill = bitcast<u32>(hi >> 31u);
  if (n == 0u) {
    return a;
  }
  if (n < 32u) {
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), bitcast<u32>(hi >> n));
  }
  if (n < 64u) {
    return vec2<u32>(bitcast<u32>(hi >> (n - 32u)), fill);
  }
  return vec2<u32>(fill, fill);
}

// Shift left by n: n = 0..63; n >= 64 gives 0.
fn i64_shl(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) {
    return a;
  }
  if (n < 32u) {
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
  }
  if (n < 64u) {
    return vec2<u32>(0u, a.x << (n - 32u));
  }
  return vec2<u32>(0u, 0u);
}

// 1 << n for n = 0..63.
fn i64_bit(n: u32) -> vec2<u32> {
  return select(vec2<u32>(0u, 1u << (n & 31u)), vec2<u32>(1u << (n & 31u), 0u), n < 32u);
}

// Rounding arithmetic shift: (a + (1 << (n - 1))) >> n, n = 1..63 (n = 0 returns a). The
// add wraps modulo 2^64 as the C expression does on int64_t in practice.
fn i64_round_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) {
    return a;
  }
  return i64_shr(i64_add(a, i64_bit(n - 1u)), n);
}

// Rounding logical shift: (a + (1 << (n - 1))) >> n on uint64_t, n = 1..63.
fn u64_round_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) {
    return a;
  }
  return u64_shr(i64_add(a, i64_bit(n - 1u)), n);
}

fn i64_and(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return a & b;
}

fn i64_or(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  return a | b;
}

// Leading zeros of the 64-bit value: 0..64.
fn u64_clz(a: vec2<u32>) -> u32 {
  return select(countLeadingZeros(a.y), 32u + countLeadingZeros(a.x), a.y == 0u);
}

// Full 32 x 32 -> 64-bit unsigned product, exact (four 16 x 16 partial products).
fn u64_mul_u32_u32(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let p11 = a1 * b1;
  // p01 + (p00 >> 16) <= (2^16-1)^2 + 2^16-1 < 2^32, and so on: no carry is lost.
  let mid = p01 + (p00 >> 16u);
  let mid2 = p10 + (mid & 0xffffu);
  return vec2<u32>(a * b, p11 + (mid >> 16u) + (mid2 >> 16u));
}

// High 32 bits of the 32 x 32 unsigned product.
fn u32_mul_hi(a: u32, b: u32) -> u32 {
  return u64_mul_u32_u32(a, b).y;
}

// Full 32 x 32 -> 64-bit signed product, exact ((int64_t)a * b).
fn i64_mul_i32_i32(a: i32, b: i32) -> vec2<u32> {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let p = u64_mul_u32_u32(ua, ub);
  // Signed high word = unsigned high word - (a < 0 ? b : 0) - (b < 0 ? a : 0) (mod 2^32).
  let hi = p.y - select(0u, ub, a < 0) - select(0u, ua, b < 0);
  return vec2<u32>(p.x, hi);
}

// Signed 32 x unsigned 32 -> 64-bit product ((int64_t)a * (uint32_t)b), exact.
fn i64_mul_i32_u32(a: i32, b: u32) -> vec2<u32> {
  let ua = bitcast<u32>(a);
  let p = u64_mul_u32_u32(ua, b);
  return vec2<u32>(p.x, p.y - select(0u, b, a < 0));
}

// 64 x 64 -> low 64 bits (int64_t or uint64_t multiply, wrapping).
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
  let p = u64_mul_u32_u32(a.x, b.x);
  return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

// 64 x signed 32 -> low 64 bits (int64_t * int32_t).
fn i64_mul_i32(a: vec2<u32>, b: i32) -> vec2<u32> {
  let p = u64_mul_u32_u32(a.x, bitcast<u32>(b));
  let bhi = bitcast<u32>(b >> 31u);
  return vec2<u32>(p.x, p.y + a.x * bhi + a.y * bitcast<u32>(b));
}

// 64 x unsigned 32 -> low 64 bits (uint64_t * uint32_t, or int64_t * uint32_t).
fn i64_mul_u32(a: vec2<u32>, b: u32) -> vec2<u32> {
  let p = u64_mul_u32_u32(a.x, b);
  return vec2<u32>(p.x, p.y + a.y * b);
}

// Full 64 x 64 -> 128-bit unsigned product: vec4 (w0 lowest .. w3 highest).
fn u64_mul_128(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
  let p00 = u64_mul_u32_u32(a.x, b.x);
  let p01 = u64_mul_u32_u32(a.x, b.y);
  let p10 = u64_mul_u32_u32(a.y, b.x);
  let p11 = u64_mul_u32_u32(a.y, b.y);
  // Middle 64 bits: p00.y + p01 + p10 (as 64-bit numbers at word 1), carries into word 3.
  let m = i64_add(vec2<u32>(p00.y, 0u), p01);       // < 2^64: no carry out
  let m2 = i64_add(m, p10);
  let c = select(0u, 1u, u64_lt(m2, p10));           // carry out of the 64-bit add
  let hi = i64_add(p11, vec2<u32>(m2.y, c));
  return vec4<u32>(p00.x, m2.x, hi.x, hi.y);
}
