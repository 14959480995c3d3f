// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/luma.wgsl"
//
// A picture's luma as the float extractors' C++ reads it (float_adm.wgsl, float_ansnr.wgsl,
// float_motion.wgsl, float_vif.wgsl, ssim-maps.wgsl; each declares BIT_DEPTH, `pic` and a
// `params` with src_word, the luma's first word in `pic`, and scale_bits):
//   luma_scaled(i):    sample i on the 8-bit scale as a float (integer-exact lib/f32.wgsl:
//                      the scaling is by a power of two, so exact)
//   luma_float(i):     that, offset by -128 (floatPlane's)
//   luma_to_float(out, id): a to_float pass's invocation: luma_float of sample id.xy of the
//                      params.width x params.height luma into out[params.dst_word + index]

const MINUS_128: u32 = 0xc3000000u;

fn luma_scaled(i: u32) -> u32 {
  // The luma starts at word src_word: sample 4 * src_word (8 bits) or 2 * src_word (16).
  if (BIT_DEPTH == 8u) {
    return f32_of_sample(luma_sample_8(&pic, 4u * params.src_word + i));
  }
  return f32_mul(f32_of_sample(luma_sample_16(&pic, 2u * params.src_word + i)), params.scale_bits); // s / 2^k: exact
}

fn luma_float(i: u32) -> u32 {
  return f32_add(luma_scaled(i), MINUS_128);
}

fn luma_to_float(out: ptr<storage, array<u32>, read_write>, id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  if (id.x >= w || id.y >= params.height) {
    return;
  }
  let i = id.y * w + id.x;
  (*out)[params.dst_word + i] = luma_float(i);
}
