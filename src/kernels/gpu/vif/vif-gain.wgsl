// #include "../lib/f64.wgsl"
//
// vif-gain.wgsl: the per-pixel double arithmetic of integer VIF's log-domain numerator,
// exactly as src/kernels/cpu/vif.cpp (addGainTerms) and libvmaf compute it in IEEE binary64
// (round to nearest even, every product and sum rounded on its own, no FMA):
//
//   g      = f64(sigma12) / (f64(sigma1_sq) + 65536 * 1e-10)
//   sv_sq  = max(trunc_to_i32(f64(sigma2_sq) - g * f64(sigma12)), 0)
//   base   = u32(sv_sq) + 2^17
//   p(L)   = trunc_to_i64((min(g, L) * min(g, L)) * f64(sigma1_sq))     for L = 100 and L = 1
//
// on the software binary64 of lib/f64.wgsl. Inputs: sigma1_sq >= 2^17 (the log branch),
// sigma12 > 0 and sigma2_sq > 0, all < 2^31. Shortcuts that are exact, not approximations:
//   g > 100: min(g, 100)^2 = 10000 exactly, and 10000 * sigma1_sq < 2^45 is an exact double;
//   g > 1:   min(g, 1) = 1, so p(1) = sigma1_sq;
//   g <= 1:  both limits give g, so p(100) = p(1) (computed once).
// C++ std::min(g, L) returns L only when L < g, which is what the f64_lt tests below ask.

// 65536 * 1.0e-10 (kGainEps), the double 0x3edb7cdfd9d7bdbb.
const VIF_GAIN_EPS: vec2<u32> = vec2<u32>(0xd9d7bdbbu, 0x3edb7cdfu);
const VIF_F64_HUNDRED: vec2<u32> = vec2<u32>(0x00000000u, 0x40590000u);
const VIF_NSQ: u32 = 131072u;

struct VifGainArgs {
  // u32(sv_sq) + 2^17
  base: u32,
  // p(100) and p(1) (non-negative, < 2^45), as u64 (lo, hi)
  p_def: vec2<u32>,
  p_egl: vec2<u32>,
}

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
