// #include "../../kernels/gpu/lib/f32.wgsl"
//
// The luma-to-float pass shared by float_ansnr.wgsl and float_motion.wgsl (which declare
// BIT_DEPTH, `pic`, `work` and a `params` with src_word, dst_word, width, height and
// scale_bits):
//   to_float: a picture's luma -> floats on the 8-bit scale, offset by -128, as the C++'s
//             picture copy does (integer-exact lib/f32.wgsl)

const MINUS_128: u32 = 0xc3000000u;

fn sample(i: u32) -> u32 {
  let at = params.src_word;
  if (BIT_DEPTH == 8u) {
    return (pic[at + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic[at + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  let w = params.width;
  if (id.x >= w || id.y >= params.height) {
    return;
  }
  let i = id.y * w + id.x;
  var v = f32_of_sample(sample(i));
  if (BIT_DEPTH != 8u) {
    v = f32_mul(v, params.scale_bits); // s / 2^k: a power-of-two scaling, exact
  }
  work[params.dst_word + i] = f32_add(v, MINUS_128);
}
