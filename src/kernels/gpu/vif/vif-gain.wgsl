// #include "../lib/f64.wgsl"
// #include "vif-log2.wgsl"
//
// vif-gain.wgsl: integer VIF's log-domain numerator terms of one pixel, bit-exact with the
// IEEE binary64 arithmetic of src/kernels/cpu/vif.cpp (addGainTerms) and libvmaf:
//
//   D      = f64(sigma1_sq) + 65536 * 1e-10                 (every op rounded to nearest even,
//   g      = f64(sigma12) / D                                no FMA)
//   r      = f64(sigma2_sq) - g * f64(sigma12)
//   sv_sq  = max(trunc_to_i32(r), 0),   base = u32(sv_sq) + 2^17
//   p(L)   = trunc_to_i64((min(g, L) * min(g, L)) * f64(sigma1_sq))   for L = 100 and L = 1
//   num(L) = log2q(p(L) + base) - log2q(base)
//
// for a pixel of the log branch: 2^17 <= sigma1_sq < 2^31, 0 < sigma2_sq, sigma12 < 2^31.
// (s1, s2, s12 below.) Two implementations:
//
// vif_gain_terms_exact: the arithmetic above on the software binary64 of lib/f64.wgsl,
//   operation for operation (about a thousand integer instructions).
//
// vif_gain_terms_fast: a few hundred integer/f32 instructions that either return the exact
//   terms, or say that they cannot (then the caller runs vif_gain_terms_exact). It does not
//   reproduce the doubles; it encloses them. Facts used (u = 2^-53, t = s12^2 / s1 real):
//   * D = s1 + delta exactly, delta = fl(2^E + eps) - 2^E for the binade 2^E <= s1 < 2^(E+1)
//     (s1 is a multiple of the ulp and s1 + eps never leaves the binade; no tie occurs, so
//     delta is the same for every s1 of a binade: VIF_DELTA_BITS, checked by the tests).
//   * g > 1 <=> s12 > s1 and g > 100 <=> s12 > 100 s1 (g = RN(s12 / D), delta < 1; the next
//     doubles above 1 and 100 are 1 + 2^-52 and 100 + 2^-46, far closer than (s12 - s1) / D
//     or (s12 - 100 s1) / D can come for integers). So p(1) = s1 when s12 > s1, p(100) =
//     10000 s1 exactly when s12 > 100 s1, and p(1) = p(100) when s12 <= s1.
//   * Real values: e* = s12^2 / D = t (1 - d), P* = s12^2 s1 / D^2 = t (1 - k) with d =
//     delta / D and k = 1 - (s1 / D)^2 = d (2 - d) (both < 2^-33). The doubles differ from
//     them by |r - (s2 - e*)| <= e* 2^-51.9 + |s2 - e| 2^-53 and |P - P*| <= P* 2^-50.9.
//   * t = q + rem / s1 with q and rem integers from a division of s12^2 (exact in 64 bits)
//     by s1, rem / s1 in f32 (error bound ex); the small corrections in f32 (relative error
//     below 2^-20, bounded generously).
//   This gives intervals [r_lo, r_hi] and [P_lo, P_hi] that contain the doubles r and P.
//   sv_sq and p are monotone in r and P, log2q is monotone: when both ends of
//   base = sv_sq + 2^17 and of p + base land on the same log2q step (the same top 16 bits and
//   bit length), the terms are exact. Otherwise (an enclosure straddles a step: about one
//   pixel in thousands) the caller falls back to vif_gain_terms_exact. WGSL's f32 +, -, *
//   are correctly rounded, / within 2.5 ulp, conversions within 1 ulp; contraction into FMA
//   only shrinks the errors; the bounds below hold with margins of 4x and more.

// 65536 * 1.0e-10 (kGainEps), the double 0x3edb7cdfd9d7bdbb.
const VIF_GAIN_EPS: vec2<u32> = vec2<u32>(0xd9d7bdbbu, 0x3edb7cdfu);
const VIF_F64_HUNDRED: vec2<u32> = vec2<u32>(0x00000000u, 0x40590000u);
const VIF_NSQ: u32 = 131072u;
// delta = fl(2^E + eps) - 2^E for E = 17..30, as binary32 bits (every one exact in binary32).
const VIF_DELTA_BITS = array<u32, 14>(
  0x36dbe700u, 0x36dbe700u, 0x36dbe700u, 0x36dbe600u, 0x36dbe800u, 0x36dbe800u, 0x36dbe000u,
  0x36dbe000u, 0x36dc0000u, 0x36dc0000u, 0x36dc0000u, 0x36dc0000u, 0x36dc0000u, 0x36d80000u);

struct VifGainArgs {
  // u32(sv_sq) + 2^17
  base: u32,
  // p(100) and p(1) (non-negative, < 2^45), as u64 (lo, hi)
  p_def: vec2<u32>,
  p_egl: vec2<u32>,
}

// The binary64 arithmetic, operation for operation (see the top). The shortcuts for g > 1
// and g > 100 are exact: min(g, 100)^2 = 10000 and 10000 * s1 < 2^45 are exact doubles,
// min(g, 1) = 1. C++ std::min(g, L) returns L only when L < g, which is what f64_lt asks.
fn vif_gain_args(s1: i32, s2: i32, s12: i32) -> VifGainArgs {
  let f1 = f64_from_i32(s1);
  let f12 = f64_from_i32(s12);
  let g = f64_div(f12, f64_add(f1, VIF_GAIN_EPS));
  let residual = f64_sub(f64_from_i32(s2), f64_mul(g, f12));
  // (int32_t)residual, then max(., 0): residual < 2^31 always; an out-of-range negative one
  // gives INT32_MIN on x86 and f64_to_i32 alike, and the max makes it 0 either way.
  let sv = max(f64_to_i32(residual), 0);
  var r: VifGainArgs;
  r.base = u32(sv) + VIF_NSQ;
  if (f64_lt(F64_ONE, g)) {
    r.p_egl = vec2<u32>(u32(s1), 0u);
    if (f64_lt(VIF_F64_HUNDRED, g)) {
      r.p_def = u64_mul_u32_u32(u32(s1), 10000u);
    } else {
      r.p_def = f64_to_i64(f64_mul(f64_mul(g, g), f1));
    }
  } else {
    let p = f64_to_i64(f64_mul(f64_mul(g, g), f1));
    r.p_def = p;
    r.p_egl = p;
  }
  return r;
}

// (num(100), num(1)) through the software binary64.
fn vif_gain_terms_exact(s1: i32, s2: i32, s12: i32) -> vec2<u32> {
  let a = vif_gain_args(s1, s2, s12);
  let lb = log2q32(a.base);
  return vec2<u32>(log2q64(i64_add_u32(a.p_def, a.base)) - lb,
                   log2q64(i64_add_u32(a.p_egl, a.base)) - lb);
}

// ---- the fast path ------------------------------------------------------------------------

// f32 of a u64 (relative error below 2^-22.9).
fn vif_f32_u64(a: vec2<u32>) -> f32 {
  return f32(a.y) * 4294967296.0 + f32(a.x);
}

// f32 of an i64 (relative error below 2^-22.9).
fn vif_f32_i64(a: vec2<u32>) -> f32 {
  let m = vif_f32_u64(i64_abs(a));
  return select(m, -m, i64_is_neg(a));
}

// max(q + f, 0) for an i64 q and a small f.
fn vif_add_clamp0(q: vec2<u32>, f: i32) -> vec2<u32> {
  let v = i64_add_i32(q, f);
  return select(v, vec2<u32>(0u, 0u), i64_is_neg(v));
}

// clamp(i + f, 0, s2) for 0 <= i <= s2 < 2^31 and a small f.
fn vif_sv_clamp(i: u32, f: i32, s2: u32) -> u32 {
  if (f >= 0) {
    return min(i + u32(f), s2);
  }
  return select(0u, i - u32(-f), i >= u32(-f));
}

// (log2q(lo), 1) when log2q(lo) == log2q(hi), else (., 0); 2^17 <= lo <= hi. log2q is
// monotone, so this says that log2q is constant on [lo, hi].
fn vif_log2q_range(lo: vec2<u32>, hi: vec2<u32>) -> vec2<u32> {
  let l = log2q64(lo);
  if (lo.y == hi.y && lo.x == hi.x) {
    return vec2<u32>(l, 1u);
  }
  // The same bit length and top 16 bits: the same table entry. (Cheap, and the usual case.)
  let k = select(16u - countLeadingZeros(lo.x), 48u - countLeadingZeros(lo.y), lo.y != 0u);
  let a = u64_shr(lo, k);
  let b = u64_shr(hi, k);
  if (a.x == b.x && a.y == b.y) {
    return vec2<u32>(l, 1u);
  }
  return vec2<u32>(l, select(0u, 1u, log2q64(hi) == l));
}

// Intervals that contain the doubles r and P of a pixel (see the top):
//   r in [i + y - er, i + y + er] when has_r, else r < 0 (sv_sq = 0);
//   P in [q + z - ep, q + z + ep] (not computed, and not needed, when s12 > 100 s1).
struct VifEnclosure {
  has_r: bool,
  i: u32,
  y: f32,
  er: f32,
  q: vec2<u32>,
  z: f32,
  ep: f32,
}

fn vif_gain_enclose(s1: i32, s2: i32, s12: i32) -> VifEnclosure {
  let us1 = u32(s1);
  let us2 = u32(s2);
  let us12 = u32(s12);
  var o: VifEnclosure;

  // t = s12^2 / s1 = q + rem2 / s1: two rounds of an f32-estimated division with exact
  // 64-bit remainders (t < 2^45).
  let a = u64_mul_u32_u32(us12, us12);
  let s1f = f32(us1);
  let inv = 1.0 / s1f;
  let q1f = floor(vif_f32_u64(a) * inv); // t (1 +- 2^-20.9), < 2^45.01
  let q1hi = floor(q1f * (1.0 / 4294967296.0));
  let q1 = vec2<u32>(u32(q1f - q1hi * 4294967296.0), u32(q1hi));
  let rem1 = i64_sub(a, i64_mul_u32(q1, us1)); // |rem1| <= 2^24.2 s1
  let d1 = i32(floor(vif_f32_i64(rem1) * inv));
  var q = i64_add_i32(q1, d1);
  let rem2 = i64_sub(rem1, i64_mul_i32_u32(d1, us1)); // |rem2| < 11 s1
  var x = vif_f32_i64(rem2) * inv;
  // |x - rem2 / s1| < |x| 2^-21.4 (f32(rem2), 1 / s1f, the product), plus 2^-24 for the
  // shift below.
  let ex = (abs(x) + 1.0) * 9.5367431640625e-07; // 2^-20
  // Move x's integer part into q, keeping q >= 0 (t >= 0).
  var k = i32(floor(x));
  if (i64_is_neg(i64_add_i32(q, k))) {
    k = -bitcast<i32>(q.x); // then q < 16
  }
  q = i64_add_i32(q, k);
  x = x - f32(k); // t = q + x_true, |x - x_true| <= ex, x in [0, 1) (or a little off when clamped)
  let qf = vif_f32_u64(q);
  o.q = q;

  let e = 31u - countLeadingZeros(us1);
  let dd = bitcast<f32>(VIF_DELTA_BITS[e - 17u]) / s1f; // d = delta / D, within 2^-21.4

  // r. s2 - e* = s2 - t (1 - d) = (s2 - q) + y, y = (q + x_true) d - x_true. (When q > s2,
  // t >= s2 + 1 - ex, so s2 - e* < -0.88 and r < 0.)
  o.has_r = q.y == 0u && q.x <= us2;
  o.i = us2 - q.x;
  o.y = (qf + x) * dd - x; // in (-1.1, 0.2)
  // y's f32 error (< ex + 2^-22) and the doubles' |r - (s2 - e*)| (< 2^-20.4) with room:
  o.er = ex + 3.814697265625e-06; // + 2^-18

  // P* = t (1 - k), k = d (2 - d) ~ 2 d: P* = q + z, z = x_true - (q + x_true) k.
  let kap = 2.0 * dd;
  o.z = x - (qf + x) * kap; // in (-3600, 1.1)
  // ex; the product's error (< 2^-20.8 relative); z's rounding and floor's argument's
  // rounding (< 2^-23 |z|); P's own |P - P*| <= P* 2^-50.9 <= (q + 2) 2^-50.9:
  o.ep = ex + (qf + abs(x)) * kap * 3.814697265625e-06 + (abs(o.z) + 1.0) * 4.76837158203125e-07 +
         (qf + 16.0) * 7.105427357601002e-15; // 2^-18, 2^-21, 2^-47
  return o;
}

// (num(100), num(1), 1) when the enclosures decide the terms, else (0, 0, 0): see the top.
fn vif_gain_terms_fast(s1: i32, s2: i32, s12: i32) -> vec3<u32> {
  let us1 = u32(s1);
  let us2 = u32(s2);
  let us12 = u32(s12);
  let gt1 = us12 > us1;
  let gt100 = us1 < 21474837u && us12 > 100u * us1;
  let c = vif_gain_enclose(s1, s2, s12);

  // sv_sq = max(trunc(r), 0), clamped to s2 (r <= s2), at both ends.
  var sv_lo = 0u;
  var sv_hi = 0u;
  if (c.has_r) {
    sv_lo = vif_sv_clamp(c.i, i32(floor(c.y - c.er)), us2);
    sv_hi = vif_sv_clamp(c.i, i32(floor(c.y + c.er)), us2);
  }
  let b_lo = sv_lo + VIF_NSQ;
  let b_hi = sv_hi + VIF_NSQ;
  let lb = vif_log2q_range(vec2<u32>(b_lo, 0u), vec2<u32>(b_hi, 0u));

  // p(100) + base at both ends.
  var def_lo: vec2<u32>;
  var def_hi: vec2<u32>;
  if (gt100) {
    def_lo = i64_add_u32(u64_mul_u32_u32(us1, 10000u), b_lo);
    def_hi = i64_add_u32(u64_mul_u32_u32(us1, 10000u), b_hi);
  } else {
    def_lo = i64_add_u32(vif_add_clamp0(c.q, i32(floor(c.z - c.ep))), b_lo);
    def_hi = i64_add_u32(vif_add_clamp0(c.q, i32(floor(c.z + c.ep))), b_hi);
  }
  let ld = vif_log2q_range(def_lo, def_hi);
  var le = ld; // p(1) = p(100) when s12 <= s1
  if (gt1) {
    le = vif_log2q_range(i64_add_u32(vec2<u32>(us1, 0u), b_lo), i64_add_u32(vec2<u32>(us1, 0u), b_hi));
  }
  if (lb.y == 0u || ld.y == 0u || le.y == 0u) {
    return vec3<u32>(0u, 0u, 0u);
  }
  return vec3<u32>(ld.x - lb.x, le.x - lb.x, 1u);
}
