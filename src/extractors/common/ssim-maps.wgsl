// #include "../../kernels/gpu/lib/f32.wgsl"
//
// The float work of libvmaf's SSIM (common/ssim-core.cpp; float_ssim, float_ms_ssim) on the
// GPU, driven by ssim-maps-gpu.ts, bit for bit as the C++ does it: every float product is
// f32_mul and every double tap sum f64_add, in the C++'s tap order, each filtered sample
// rounded to float by f32_from_f64 (lib/f32.wgsl: integer arithmetic only, so no compiler
// contraction into FMAs and no flushed subnormals can change a bit). What comes out are the
// five filtered maps per output row (ssim::meanSsimFromMaps's layout); the per-sample SSIM
// terms (float and double divisions, the sqrt) and the double pooling sums, whose order
// matters, run on the host from them (the C++ extractor's finishStats).
//
// Images are floats (bit patterns) in `work`, rows packed, placed by Params.
//   to_float:        a picture's luma -> float image (libvmaf's picture_copy scaling)
//   decimate:        float image -> every factor-th sample through a taps x taps kernel
//   filter_rows:     ref and dis images -> horizontal 11-tap Gaussian of ref, dis, ref^2,
//                    dis^2, ref*dis, where the window fits (ow = w - 10 per row), for one
//                    band of source rows, into `rows`
//   filter_columns:  those rows -> the vertical 11-tap Gaussian of the band's output rows,
//                    into `maps` (a binding of just that band's part of the stats)
// Bands keep the row scratch and each maps binding under the storage binding limit, so a
// picture of any height has its maps written (2160p's are 165 MB for one scale).

override BIT_DEPTH: u32 = 8u;
const WINDOW: u32 = 11u;
const QUANTITIES: u32 = 5u;

// The Gaussian's float constants, as bit patterns (0.001028f, 0.007599f, ... symmetric).
const GAUSSIAN = array<u32, 11>(
  0x3a86bdf5u, 0x3bf90108u, 0x3d1375c9u, 0x3ddff8a9u, 0x3e5a1e3fu, 0x3e8832bau, 0x3e5a1e3fu, 0x3ddff8a9u, 0x3d1375c9u, 0x3bf90108u, 0x3a86bdf5u);

struct Params {
  src_word: u32,   // first word of the source (picture plane, or image in work)
  src2_word: u32,  // filter_rows: the dis image
  src_width: u32,
  src_height: u32,
  dst_word: u32,   // first word of the destination (in work, or in maps)
  dst_width: u32,
  dst_height: u32,
  factor: u32,     // decimate
  taps: u32,       // decimate: the kernel's side
  scale_bits: u32, // to_float: 1 / 2^(bitDepth - 8) as a float
  row0: u32,       // filter_rows: the band's first source row
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;
@group(0) @binding(2) var<storage, read_write> maps: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> weights: array<u32>;
@group(0) @binding(5) var<storage, read_write> rows: array<u32>;

fn sample(i: u32) -> u32 {
  let at = params.src_word;
  if (BIT_DEPTH == 8u) {
    return (pic[at + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic[at + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  let w = params.src_width;
  if (id.x >= w || id.y >= params.src_height) {
    return;
  }
  let i = id.y * w + id.x;
  var v = f32_of_sample(sample(i));
  if (BIT_DEPTH != 8u) {
    v = f32_mul(v, params.scale_bits); // s / 2^k: a power-of-two scaling, exact
  }
  work[params.dst_word + i] = v;
}

fn mirror(i: i32, n: i32) -> u32 {
  if (i < 0) {
    return u32(-1 - i);
  }
  if (i >= n) {
    return u32(2 * n - 1 - i);
  }
  return u32(i);
}

@compute @workgroup_size(16, 16)
fn decimate(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x >= params.dst_width || id.y >= params.dst_height) {
    return;
  }
  let w = i32(params.src_width);
  let h = i32(params.src_height);
  let size = params.taps;
  let centre = i32(size / 2u);
  let f = i32(params.factor);
  var acc = F64_ZERO;
  for (var v = 0u; v < size; v = v + 1u) {
    let row = mirror(i32(id.y) * f + i32(v) - centre, h);
    let base = params.src_word + row * u32(w);
    for (var u = 0u; u < size; u = u + 1u) {
      let col = mirror(i32(id.x) * f + i32(u) - centre, w);
      acc = f64_add(acc, f64_from_f32_bits(f32_mul(work[base + col], weights[v * size + u])));
    }
  }
  work[params.dst_word + id.y * params.dst_width + id.x] = f32_from_f64(acc);
}

// One source row of the band (dst_height rows from row0), one output column: the five
// horizontal sums (the squares and the product are float products of the samples, as the
// C++ forms them first).
@compute @workgroup_size(16, 16)
fn filter_rows(@builtin(global_invocation_id) id: vec3<u32>) {
  let w = params.src_width;
  let ow = w - WINDOW + 1u;
  let h = params.dst_height;
  if (id.x >= ow || id.y >= h) {
    return;
  }
  var acc: array<vec2<u32>, 5>;
  for (var q = 0u; q < QUANTITIES; q = q + 1u) {
    acc[q] = F64_ZERO;
  }
  let base = (params.row0 + id.y) * w + id.x;
  for (var k = 0u; k < WINDOW; k = k + 1u) {
    let a = work[params.src_word + base + k];
    let b = work[params.src2_word + base + k];
    let g = GAUSSIAN[k];
    let values = array<u32, 5>(a, b, f32_mul(a, a), f32_mul(b, b), f32_mul(a, b));
    for (var q = 0u; q < QUANTITIES; q = q + 1u) {
      acc[q] = f64_add(acc[q], f64_from_f32_bits(f32_mul(values[q], g)));
    }
  }
  for (var q = 0u; q < QUANTITIES; q = q + 1u) {
    rows[(q * h + id.y) * ow + id.x] = f32_from_f64(acc[q]);
  }
}

// One output sample of the band (src_height filtered rows in `rows`, dst_height = those
// less 10 output rows): the vertical sums of the five row-filtered quantities, written as
// the row's block of five ow-float maps at dst_word of `maps`.
@compute @workgroup_size(16, 16)
fn filter_columns(@builtin(global_invocation_id) id: vec3<u32>) {
  let ow = params.src_width - WINDOW + 1u;
  let h = params.src_height;
  if (id.x >= ow || id.y >= params.dst_height) {
    return;
  }
  for (var q = 0u; q < QUANTITIES; q = q + 1u) {
    var acc = F64_ZERO;
    for (var k = 0u; k < WINDOW; k = k + 1u) {
      let v = rows[(q * h + id.y + k) * ow + id.x];
      acc = f64_add(acc, f64_from_f32_bits(f32_mul(v, GAUSSIAN[k])));
    }
    maps[params.dst_word + (id.y * QUANTITIES + q) * ow + id.x] = f32_from_f64(acc);
  }
}
