// #include "f64.wgsl"
//
// f32.wgsl: the binary32 operations a C++ float kernel compiled with -ffp-contract=off
// does, bit-exact with x86-64 SSE (round to nearest even, subnormals kept). A float is its
// bit pattern as a u32.
//
// Why not plain WGSL f32: a shader compiler (Tint, then the driver) may contract a * b + c
// into one fused multiply-add (one rounding instead of two), and Vulkan lets an
// implementation flush subnormal inputs and results to zero; either changes last bits.
// Integer arithmetic has neither freedom, so each operation has an integer-only form
// (f32_*_exact) that gives the same bits on every adapter, and takes the GPU's own float
// result only where that is provably the same (the native fast paths below).
//
// The integer float product goes through f64.wgsl: the exact product of two 24-bit significands
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

// ---- native fast paths ------------------------------------------------------------------
//
// The GPU's own float +, - and * are correctly rounded to nearest even wherever both inputs
// and the result are normal (Vulkan's precision rules: only subnormals may be flushed), so
// each operation below takes the native result there and the integer way elsewhere; the
// bits are the same either way. What stays to rule out is contraction: a native product
// feeding a native sum may become one FMA. So every native product leaves f32_mul XORed
// with f32_zero, a 0 the compiler cannot know (it comes from a uniform at run time), and no
// native operation ever sees a raw native product. Products are native only after the entry
// point called f32_native_begin (until then f32_zero would be a known 0): forgetting it
// costs speed, never bits. Sums and differences never feed a contraction (an FMA adds after
// multiplying), so they are native without it.
//
// F32_NATIVE: false turns every native path off (the host sets it where its start-up probe
// of this adapter's float arithmetic, f32-probe.ts, found a native result differing).
override F32_NATIVE: bool = true;
var<private> f32_zero: u32;
var<private> f32_native_mul: bool;

// Enables native products for this invocation. `dim` is any run-time uniform value below
// 2^31 (a plane's width: Params fields are opaque to the compiler, override constants are
// not, Dawn substitutes them), so dim >> 31 is the 0 the products are XORed with.
fn f32_native_begin(dim: u32) {
  f32_zero = dim >> 31u;
  f32_native_mul = F32_NATIVE;
}

// A float's biased exponent is that of a normal number (not 0: zero or subnormal, nor 255:
// infinity or NaN).
fn f32_is_normal(a: u32) -> bool {
  return ((a >> 23u) & 0xffu) - 1u < 254u;
}

// The correctly rounded float product a * b (bit patterns), NaN/inf/zero/subnormal as SSE.
// Written with one branch (selects and non-short-circuit & |, no early returns): a software
// rasterizer runs every branch a lane takes for the whole SIMD group.
fn f32_mul(a: u32, b: u32) -> u32 {
  var r = 0u;
  var ok = false;
  if (f32_native_mul) {
    r = bitcast<u32>(bitcast<f32>(a) * bitcast<f32>(b)) ^ f32_zero;
    ok = f32_is_normal(a) & f32_is_normal(b) & f32_is_normal(r);
    // Zero times a finite number: a signed zero.
    let zero = (((a & 0x7fffffffu) == 0u) & ((b & 0x7f800000u) != 0x7f800000u))
      | (((b & 0x7fffffffu) == 0u) & ((a & 0x7f800000u) != 0x7f800000u));
    r = select(r, (a ^ b) & 0x80000000u, zero);
    ok = ok | zero;
  }
  if (!ok) {
    r = f32_mul_exact(a, b);
  }
  return r;
}

// f32_mul in integers only (also what the native path is checked against).
fn f32_mul_exact(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_mul(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}

// Sums, quotients and comparisons go through the double as the product does: a double
// result rounded to float is the correctly rounded float result whenever the double keeps
// at least 2p + 2 = 50 bits for p = 24 (double rounding is innocuous for +, -, *, / and
// sqrt then: Figueroa, "When is double rounding innocuous?", 1995), and 53 >= 50. So each
// gives what addss / subss / divss give, NaN, infinity, signed zero and subnormals included.

// The correctly rounded float sum a + b: native for two normal inputs with a normal result
// (a native zero from cancellation may be a flushed subnormal, so it is not taken), zero
// operands and x + -x by IEEE's rules in integers, anything else (subnormals, infinities,
// NaNs) the integer way.
fn f32_add(a: u32, b: u32) -> u32 {
  var r = 0u;
  var ok = false;
  if (F32_NATIVE) {
    r = bitcast<u32>(bitcast<f32>(a) + bitcast<f32>(b));
    ok = f32_is_normal(a) & f32_is_normal(b) & f32_is_normal(r);
    let a_mag = a & 0x7fffffffu;
    let b_mag = b & 0x7fffffffu;
    // +0 + -0 = +0, -0 + -0 = -0, zero + x = x (x finite).
    let a_zero = (a_mag == 0u) & (b_mag < 0x7f800000u);
    let b_zero = (b_mag == 0u) & (a_mag < 0x7f800000u);
    // x + -x = +0 exactly (round to nearest), for x finite: flat content cancels often.
    let cancel = ((a ^ b) == 0x80000000u) & (a_mag < 0x7f800000u);
    r = select(select(select(r, 0u, cancel), a, b_zero), select(b, a & b, b_mag == 0u), a_zero);
    ok = ok | a_zero | b_zero | cancel;
  }
  if (!ok) {
    r = f32_add_exact(a, b);
  }
  return r;
}

// f32_add in integers only.
fn f32_add_exact(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_add(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}

// f32_add for sums (a row's terms in column order, a filter's taps). The same as f32_add
// now that every add takes the native path where it is exact; kept for its callers.
fn f32_add_serial(a: u32, b: u32) -> u32 {
  return f32_add(a, b);
}

// The correctly rounded float difference a - b: a + (-b), which IEEE makes the same for
// every b but a NaN; a NaN b is passed as it is (subss and addss both give the first NaN of
// the two, made quiet: f64_propagate_nan).
fn f32_sub(a: u32, b: u32) -> u32 {
  return f32_add(a, select(b ^ 0x80000000u, b, (b & 0x7fffffffu) > 0x7f800000u));
}

// The correctly rounded float quotient a / b. The GPU's own quotient is not correctly rounded
// (Vulkan allows 2.5 ulp), so with native products on and a, b normal it is only a guess q,
// checked and stepped a float at a time in integers: with significands ma, mb, mq (24 bits)
// and biased exponents Ea, Eb, Eq, q is the rounded a / b exactly when
// |ma 2^(Ea - Eb + 151 - Eq) - 2 mq mb| < mb (the error below half an ulp of q; a quotient of
// two floats never lies exactly halfway between floats with a normal result). A guess still
// wrong after three steps, or not normal, goes the integer way. The result leaves XORed with
// f32_zero as a product does (a compiler may turn a / b into a times 1 / b).
fn f32_div(a: u32, b: u32) -> u32 {
  if (f32_native_mul && f32_is_normal(a) && f32_is_normal(b)) {
    let ma = (a & 0x7fffffu) | 0x800000u;
    let mb = (b & 0x7fffffu) | 0x800000u;
    let eab = i32((a >> 23u) & 0xffu) - i32((b >> 23u) & 0xffu) + 151;
    var q = bitcast<u32>(bitcast<f32>(a) / bitcast<f32>(b)) ^ f32_zero;
    for (var step = 0u; step < 3u; step = step + 1u) {
      if (!f32_is_normal(q) || ((q ^ a ^ b) >> 31u) != 0u) {
        break;
      }
      let shift = eab - i32((q >> 23u) & 0xffu); // 23 to 26 near the quotient
      if (shift < 20 || shift > 30) {
        break;
      }
      let mq = (q & 0x7fffffu) | 0x800000u;
      let d = i64_sub(i64_shl(vec2<u32>(ma, 0u), u32(shift)), i64_shl(u64_mul_u32_u32(mq, mb), 1u));
      if (u64_lt(i64_abs(d), vec2<u32>(mb, 0u))) {
        return q;
      }
      // Too small in magnitude (d > 0): the next float away from zero; else toward it.
      q = select(q - 1u, q + 1u, !i64_is_neg(d));
    }
  }
  return f32_div_exact(a, b);
}

// f32_div in integers only.
fn f32_div_exact(a: u32, b: u32) -> u32 {
  return f32_from_f64(f64_div(f64_from_f32_bits(a), f64_from_f32_bits(b)));
}

// (float)i, rounded to nearest even (cvtsi2ss), in integers: the magnitude's top 24 bits,
// rounded on the bits below them.
fn f32_from_i32(i: i32) -> u32 {
  if (i == 0) {
    return 0u;
  }
  let sign = select(0u, 0x80000000u, i < 0);
  let m = select(u32(i), 0u - bitcast<u32>(i), i < 0); // |i|, 2^31 included
  let top = 31u - countLeadingZeros(m);
  if (top <= 23u) {
    return sign | ((127u + top) << 23u) | ((m << (23u - top)) & 0x7fffffu);
  }
  let drop = top - 23u;
  var sig = m >> drop; // 24 bits
  let rest = m & ((1u << drop) - 1u);
  let half = 1u << (drop - 1u);
  if (rest > half || (rest == half && (sig & 1u) == 1u)) {
    sig = sig + 1u;
  }
  // A carry out of 24 bits lands in the exponent, as it should.
  return sign | (((126u + top) << 23u) + sig);
}

// C's a < b and a > b on floats (false with a NaN, +0 and -0 equal), in integers: the bit
// patterns made monotonic (a negative's magnitude bits reversed, a positive's sign set).
fn f32_order_key(a: u32) -> u32 {
  return select(a | 0x80000000u, ~a, (a >> 31u) == 1u);
}

fn f32_lt(a: u32, b: u32) -> bool {
  let a_mag = a & 0x7fffffffu;
  let b_mag = b & 0x7fffffffu;
  if (a_mag > 0x7f800000u || b_mag > 0x7f800000u || (a_mag | b_mag) == 0u) {
    return false;
  }
  return f32_order_key(a) < f32_order_key(b);
}

fn f32_gt(a: u32, b: u32) -> bool {
  return f32_lt(b, a);
}

// The correctly rounded square root of a float (sqrtss), which is also what
// (float)sqrt((double)a) gives (double rounding is innocuous for sqrt, see above): the
// integer square root of the significand, scaled to 25 or 26 bits, with its remainder
// deciding the rounding (a float's square root never lies exactly halfway between two
// floats, so there is no tie). Negative numbers give the x86 default NaN, -0 gives -0.
fn f32_sqrt(a: u32) -> u32 {
  let e = (a >> 23u) & 0xffu;
  var m = a & 0x7fffffu;
  if (e == 0xffu) {
    if (m != 0u) {
      return a | 0x400000u; // a NaN, made quiet
    }
    return select(a, 0xffc00000u, (a >> 31u) == 1u);
  }
  if ((a & 0x7fffffffu) == 0u) {
    return a;
  }
  if ((a >> 31u) == 1u) {
    return 0xffc00000u;
  }
  // a = m * 2^x with m a 24-bit integer (subnormals normalized), then x made even.
  var x = i32(e) - 150;
  if (e == 0u) {
    let shift = countLeadingZeros(m) - 8u;
    m = m << shift;
    x = -149 - i32(shift);
  } else {
    m = m | 0x800000u;
  }
  var sig = vec2<u32>(m, 0u);
  if ((x & 1) != 0) {
    sig = i64_shl(sig, 1u);
    x = x - 1;
  }
  // n = sig * 2^24 (2^47 <= n < 2^49), so sqrt(a) = sqrt(n) * 2^((x - 24) / 2); digit by
  // digit, root = floor(sqrt(n)) (2^23.5 <= root < 2^24.5) and rest = n - root^2.
  var rest = i64_shl(sig, 24u);
  var root = vec2<u32>(0u, 0u);
  var bit = vec2<u32>(0u, 0x10000u); // 2^48, the largest power of 4 not above any n
  for (var i = 0u; i < 25u; i = i + 1u) {
    let t = i64_add(root, bit);
    if (u64_ge(rest, t)) {
      rest = i64_sub(rest, t);
      root = i64_add(u64_shr(root, 1u), bit);
    } else {
      root = u64_shr(root, 1u);
    }
    bit = u64_shr(bit, 2u);
  }
  let r = root.x;
  var scale = (x - 24) / 2;
  var q = r;
  if (r >= 0x1000000u) {
    // 25 bits: the dropped bit and anything below it (rest > 0) decide.
    q = r >> 1u;
    scale = scale + 1;
    if ((r & 1u) == 1u && (rest.x | rest.y) != 0u) {
      q = q + 1u;
    }
  } else if (u64_gt(rest, vec2<u32>(r, 0u))) {
    // sqrt(n) - r > 1/2 exactly when n > r^2 + r + 1/4, i.e. rest > r.
    q = q + 1u;
  }
  if (q == 0x1000000u) {
    q = 0x800000u;
    scale = scale + 1;
  }
  return (u32(scale + 150) << 23u) | (q & 0x7fffffu);
}

// A sample (below 2^16) as a float, exactly, from its bits (the float kernels read planes
// through it).
fn f32_of_sample(s: u32) -> u32 {
  if (s == 0u) {
    return 0u;
  }
  let top = 31u - countLeadingZeros(s);
  return ((127u + top) << 23u) | (((s << (31u - top)) >> 8u) & 0x7fffffu);
}
