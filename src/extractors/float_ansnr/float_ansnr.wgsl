// #include "../common/float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
//
// float_ansnr on the GPU (driven by float_ansnr-gpu.ts), bit for bit as float_ansnr.cpp does
// it: every float operation is lib/f32.wgsl's integer-exact one (no FMA contraction, no
// flushed subnormals), in the C++'s order.
//   to_float:  a picture's luma -> floats on the 8-bit scale, offset by -128
//   filter_2d: a float image -> its 2-D filter (taps x taps, weights row-major): per output
//              sample each kernel row summed in float, then the rows; edges mirrored with
//              the edge sample repeated (-1 -> 1, n -> n - 1)
//   energies:  one invocation per row: the row's float sums of ref^2 and (ref - dis)^2,
//              left to right
//   total:     one invocation: those row sums added top to bottom, in float; the two floats'
//              bit patterns written as the instance's two accumulators
// The sums are sequential float additions, as the C++'s, so they are exact reproductions,
// not reductions in another order.

override BIT_DEPTH: u32 = 8u;

struct Params {
  src_word: u32,   // to_float: the plane in the picture; filter: the image in work
  dst_word: u32,   // to_float, filter: the image written in work; energies: the row sums
  width: u32,
  height: u32,
  taps: u32,       // filter: the kernel's side (3 or 5)
  weights_at: u32, // filter: its first weight
  scale_bits: u32, // to_float: 1 / 2^(bitDepth - 8) as a float
  ref_word: u32,   // energies: the filtered images
  dis_word: u32,
  out_word: u32,   // total: the instance's first stats word
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> weights: array<u32>;

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  luma_to_float(&work, id);
}

@compute @workgroup_size(16, 16)
fn filter_2d(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  let h = params.height;
  if (id.x >= w || id.y >= h) {
    return;
  }
  let size = params.taps;
  let radius = i32(size / 2u);
  var acc = 0u;
  for (var fi = 0u; fi < size; fi = fi + 1u) {
    let row = mirror_skip_first(i32(id.y) - radius + i32(fi), i32(h));
    let base = params.src_word + row * w;
    var sum = 0u;
    for (var fj = 0u; fj < size; fj = fj + 1u) {
      let col = mirror_skip_first(i32(id.x) - radius + i32(fj), i32(w));
      sum = f32_add(sum, f32_mul(weights[params.weights_at + fi * size + fj], work[base + col]));
    }
    acc = f32_add(acc, sum);
  }
  work[params.dst_word + id.y * w + id.x] = acc;
}

@compute @workgroup_size(64)
fn energies(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  if (id.x >= params.height) {
    return;
  }
  let base = id.x * w;
  var signal = 0u;
  var noise = 0u;
  for (var j = 0u; j < w; j = j + 1u) {
    let r = work[params.ref_word + base + j];
    let d = work[params.dis_word + base + j];
    signal = f32_add(signal, f32_mul(r, r));
    let diff = f32_sub(r, d);
    noise = f32_add(noise, f32_mul(diff, diff));
  }
  work[params.dst_word + 2u * id.x] = signal;
  work[params.dst_word + 2u * id.x + 1u] = noise;
}

@compute @workgroup_size(1)
fn total() {
  var signal = 0u;
  var noise = 0u;
  for (var i = 0u; i < params.height; i = i + 1u) {
    signal = f32_add(signal, work[params.src_word + 2u * i]);
    noise = f32_add(noise, work[params.src_word + 2u * i + 1u]);
  }
  let at = params.out_word;
  stats[at] = signal;
  stats[at + 1u] = 0u;
  stats[at + 2u] = noise;
  stats[at + 3u] = 0u;
}
