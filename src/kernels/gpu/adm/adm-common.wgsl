// #include "../lib/i64.wgsl"
// #include "adm-angle.wgsl"
// #include "adm-variants.wgsl"
//
// adm-common.wgsl (library): the per-position arithmetic of integer ADM, shared by the DWT
// pass (decouple + CSF) and the masking pass, following src/kernels/cpu/adm.h step for step.
// i16c / C's (int16_t) casts are explicit; i32 arithmetic wraps (WGSL's runtime i32 ops
// do), which is what C's (int32_t) casts of wider sums give. 64-bit steps use i64.wgsl.

// Daubechies-2 taps (adm.h): L = {15826, 27411, 7345, -4240}, H = {-4240, -7345, 27411, -15826}.
const ADM_L0: i32 = 15826;
const ADM_L1: i32 = 27411;
const ADM_L2: i32 = 7345;
const ADM_L3: i32 = -4240;
const ADM_H0: i32 = -4240;
const ADM_H1: i32 = -7345;
const ADM_H2: i32 = 27411;
const ADM_H3: i32 = -15826;

// The DWT tile of the first pass: TW x TH band positions per workgroup (one per
// invocation), read from (2 TH + 2) x (2 TW + 2) input samples.
const ADM_TW: u32 = 32u;
const ADM_TH: u32 = 8u;
const ADM_IN_W: u32 = 2u * ADM_TW + 2u; // 66
const ADM_IN_H: u32 = 2u * ADM_TH + 2u; // 18
const ADM_WG: u32 = ADM_TW * ADM_TH;    // 256

// C's (int16_t) cast: the low 16 bits, sign-extended.
fn i16c(x: i32) -> i32 {
  return (x << 16u) >> 16u;
}

// Border reflection (adm.h): -1 -> 1, n -> n-1, n+1 -> n-2; clamped (only sizes below
// kAdmMinSize, or tile lanes outside the band, reach the clamp).
fn adm_mirror(i: i32, n: i32) -> i32 {
  var j = i;
  if (j < 0) {
    j = -j;
  }
  if (j >= n) {
    j = 2 * n - 1 - j;
  }
  return clamp(j, 0, n - 1);
}

// 16-bit halves of a packed word (scale 0 stores its int16 quantities two to a word).
fn adm_pack16(lo: i32, hi: i32) -> u32 {
  return (u32(lo) & 0xffffu) | (u32(hi) << 16u);
}

fn adm_lo16(w: u32) -> i32 {
  return i16c(bitcast<i32>(w));
}

fn adm_hi16(w: u32) -> i32 {
  return bitcast<i32>(w) >> 16u;
}

// R(v) = trunc(2^30 / v), v != 0, |v| <= 32768.
fn adm_recip(v: i32) -> i32 {
  let r = i32(1073741824u / u32(abs(v)));
  return select(r, -r, v < 0);
}

// clamp(q, 0, 32768) of an int64.
fn adm_clamp_k(q: vec2<u32>) -> i32 {
  if (i64_is_neg(q)) {
    return 0;
  }
  if (q.y != 0u || q.x > 32768u) {
    return 32768;
  }
  return i32(q.x);
}

// ---- scale 0 (int16 bands) -------------------------------------------------------------

// CSF of an int16 band value v at scale 0, band b, with the band's weight w (Q21 for h and
// v, Q23 for d; 36453, 36453, 49417 at default options): (neighbour term, centre term).
// DLM takes it of the impairment a = i16(t - r), AIM of the restored r. w * a wraps in i32
// for weights far above the defaults, as libvmaf's int32 product does.
fn adm_csf0(w: i32, b: u32, a: i32) -> vec2<i32> {
  var ca: i32;
  if (b == 2u) {
    ca = i16c((w * a + 65535) >> 17u);
  } else {
    ca = i16c((w * a + 16384) >> 15u);
  }
  let c = abs(ca);
  return vec2<i32>(i16c((4369 * c + 2048) >> 12u), i16c((8738 * c + 2048) >> 12u));
}

// Masked cube of band b at scale 0, with the band's weight w, as i64 (r: the restored value
// for DLM, the impairment for AIM): x = max(|r W| - (thr << tsh), 0),
// xs = i32((x^2 + 2^(q-1)) >> q), cube = (xs x + rnd(c)) >> c. Near the default weights xs
// stays below 2^31; far above them libvmaf's int32 xs wraps negative, and the cube with it.
fn adm_mask0(w: i32, b: u32, r: i32, thr: i32, cube_shift: u32) -> vec2<u32> {
  var tsh: u32 = 10u;
  var q: u32 = 29u;
  if (b == 2u) {
    tsh = 12u;
    q = 30u;
  }
  let v = abs(r * w) - bitcast<i32>(bitcast<u32>(thr) << tsh);
  let x = u32(max(v, 0));
  let xs = u64_shr(i64_add(u64_mul_u32_u32(x, x), i64_bit(q - 1u)), q).x;
  return i64_round_shr(i64_mul_i32_i32(bitcast<i32>(xs), bitcast<i32>(x)), cube_shift);
}

// |o|^3 (u64), scale 0.
fn adm_den0(o: i32) -> vec2<u32> {
  let u = u32(abs(o));
  return u64_mul_u32_u32(u * u, u);
}

// ---- scales 1..3 (int32 bands, 64-bit intermediates) -----------------------------------

// Q15 ratio t / o clamped to [0, 32768], o first rounded to 15 significant bits.
fn adm_gain(o: i32, t: i32) -> i32 {
  if (o == 0) {
    return 32768;
  }
  let u = select(bitcast<u32>(o), 0u - bitcast<u32>(o), o < 0);
  var e = 0u;
  var m = u;
  if (u >= 32768u) {
    e = 17u - countLeadingZeros(u);
    m = (u + (1u << (e - 1u))) >> e;
  }
  var num = i64_mul_i32_i32(i32(1073741824u / m), t);
  if (o < 0) {
    num = i64_neg(num);
  }
  return adm_clamp_k(i64_shr(i64_add(num, i64_bit(14u + e)), 15u + e));
}

// CSF at scales 1..3 of a band value a with the band's Q32 weight w: (neighbour term,
// centre term). DLM takes it of a = i32((int64)t - r), AIM of r.
fn adm_csf(w: u32, a: i32) -> vec2<i32> {
  let ca = i64_to_i32(i64_shr(i64_add_u32(i64_mul_i32_u32(a, w), 0x8000000u), 28u));
  let c = abs(ca); // abs(INT32_MIN) stays INT32_MIN, as in C
  // (K * c - 2^31) >> 32 (libvmaf's rounding constant is (int32_t)(1u << 31)), i32 of it:
  // the high word of the int64.
  let n = i64_sub(i64_mul_i32_i32(c, 143165577), vec2<u32>(0x80000000u, 0u));
  let m = i64_sub(i64_mul_i32_i32(c, 286331153), vec2<u32>(0x80000000u, 0u));
  return vec2<i32>(bitcast<i32>(n.y), bitcast<i32>(m.y));
}

// Masked cube at scales 1..3 (int64): x = max(|i32((r w + 2^27) >> 28)| - thr, 0),
// sq = i32((x^2 + 2^29) >> 30), cube = (sq x + rnd(c)) >> c.
fn adm_mask(w: u32, r: i32, thr: i32, cube_shift: u32) -> vec2<u32> {
  let v = i64_to_i32(i64_shr(i64_add_u32(i64_mul_i32_u32(r, w), 0x8000000u), 28u));
  let x = max(abs(v) - thr, 0);
  let sq = i64_to_i32(i64_shr(i64_add_u32(u64_mul_u32_u32(u32(x), u32(x)), 0x20000000u), 30u));
  return i64_round_shr(i64_mul_i32_i32(sq, x), cube_shift);
}

// Denominator cube at scales 1..3 (u64): ((((u^2 + 2^qs) >> qs) * u) + rnd(cd)) >> cd.
fn adm_den(o: i32, qs: u32, cd: u32) -> vec2<u32> {
  let u = select(bitcast<u32>(o), 0u - bitcast<u32>(o), o < 0);
  let sq = u64_shr(i64_add(u64_mul_u32_u32(u, u), i64_bit(qs)), qs);
  return u64_round_shr(i64_mul_u32(sq, u), cd);
}
