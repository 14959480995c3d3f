// #include "../../kernels/gpu/lib/f32.wgsl"
//
// A picture's luma as the float extractors' C++ reads it (float_adm.wgsl, float_ansnr.wgsl,
// float_motion.wgsl, float_vif.wgsl; each declares BIT_DEPTH, `pic` and a `params` with
// src_word and scale_bits, and keeps its own to_float pass, which writes luma_float(i) into its own buffer):
//   luma_float(i): sample i on the 8-bit scale, offset by -128, as a float (integer-exact
//                  lib/f32.wgsl: the scaling is by a power of two, so exact)

const MINUS_128: u32 = 0xc3000000u;

fn sample(i: u32) -> u32 {
  let at = params.src_word;
  if (BIT_DEPTH == 8u) {
    return (pic[at + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic[at + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

fn luma_float(i: u32) -> u32 {
  var v = f32_of_sample(sample(i));
  if (BIT_DEPTH != 8u) {
    v = f32_mul(v, params.scale_bits); // s / 2^k: a power-of-two scaling, exact
  }
  return f32_add(v, MINUS_128);
}
