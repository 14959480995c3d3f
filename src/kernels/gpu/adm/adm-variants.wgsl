// adm-variants.wgsl (library): how many gain-limit variants the ADM passes compute, and
// where each variant's values lie in their scratch (adm-kernel.ts sizes the buffers alike).
//
// The default kernel computes two per position (adm_enhn_gain_limit 100 and 1), but only
// the NEG models read the second (the _egl_1 keys), and an instance kernel at one gain limit
// never does. Such kernels are compiled with ADM_TWO_VARIANTS = false: variant 1's decouple,
// CSF and masking are not done, its sums not kept, and the scratch is smaller. Variant 0's
// arithmetic is the same either way, so its stats are the same bits.

override ADM_TWO_VARIANTS: bool = true;

// vec4 words of mbuf per band position (adm-dwt0.wgsl, adm-dwtn.wgsl list them).
override ADM_M_STRIDE0: u32 = select(2u, 3u, ADM_TWO_VARIANTS); // scale 0 (int16 values packed)
override ADM_M_STRIDE: u32 = select(3u, 5u, ADM_TWO_VARIANTS);  // scales 1..3

// The row stats per scored band row (adm-mask.wgsl writes them, adm-final.wgsl adds them up):
// DLM numerators h, v, d of variant 0, [of variant 1,] denominators h, v, d, AIM numerators
// h, v, d of variant 0[, of variant 1].
override ADM_ROW_STATS: u32 = select(9u, 15u, ADM_TWO_VARIANTS);
override ADM_ROW_DEN: u32 = select(3u, 6u, ADM_TWO_VARIANTS);   // first denominator
override ADM_ROW_AIM: u32 = select(6u, 9u, ADM_TWO_VARIANTS);   // first AIM numerator of variant 0
const ADM_ROW_EGL: u32 = 3u;  // first DLM numerator of variant 1 (two variants only)
const ADM_ROW_AIM1: u32 = 12u; // first AIM numerator of variant 1 (two variants only)

// The row stat that adm.h's stat k (0..59: per scale 9 DLM stats, then per scale 6 AIM)
// is the sum of, or ADM_ROW_STATS for a stat of variant 1 that this kernel does not compute.
fn adm_row_stat(k: u32) -> u32 {
  var j: u32;
  var aim = false;
  if (k < 36u) {
    j = k % 9u; // 0..2 numerators, 3..5 those of variant 1, 6..8 denominators
  } else {
    j = (k - 36u) % 6u; // 0..2 variant 0, 3..5 variant 1
    aim = true;
  }
  if (ADM_TWO_VARIANTS) {
    return select(j, ADM_ROW_AIM + j, aim);
  }
  if (j >= 3u && j < 6u) {
    return ADM_ROW_STATS;
  }
  if (aim) {
    return ADM_ROW_AIM + j;
  }
  return select(j, j - 3u, j >= 6u);
}
