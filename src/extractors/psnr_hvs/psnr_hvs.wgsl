// #include "../../kernels/gpu/lib/f32.wgsl"
//
// psnr_hvs on the GPU (psnr_hvs-gpu.ts), bit for bit as psnr_hvs.cpp's blockTerms: one
// invocation per 8x8 block pair of one plane (blocks every 7 samples), which loads both
// blocks, takes their variance ratios, transforms them with the integer 8-point DCT, takes
// their masking levels and writes the block's 64 terms (each coefficient's masked,
// CSF-weighted error, squared) as floats. Every float step is lib/f32.wgsl's integer-exact
// operation in the C++'s order; the DCT is integer arithmetic wrapping as int32 does. The
// plane's running float total over the terms (one sum through every block, so it cannot be
// split per block) is psnr_hvs.cpp's finishStats, on the host.

override BIT_DEPTH: u32 = 8u;
const STEP: u32 = 7u;

// Float constants (bit patterns): 1 / 63.f * 64 and 1 / 15.f * 16 as C++ forms them in
// float, 64.f, 16.f.
const N63: u32 = 0x3f820821u;
const N15: u32 = 0x3f888889u;
const F64: u32 = 0x42800000u;
const F16: u32 = 0x41800000u;

struct Params {
  plane_word: u32,  // the plane's first word in the picture buffers
  width: u32,       // the plane's samples per row
  blocks_x: u32,    // blocks per row of blocks
  blocks: u32,      // blocks in the plane
  dst_word: u32,    // the plane's first term in `terms`
  table: u32,       // the plane's weights: csf at table * 128, mask at table * 128 + 64
  // 2, and 5: loop bounds the shader compiler cannot see. Every float operation is a large
  // integer routine inlined where it is called, so the ref/dis pair and the whole-block /
  // quarter sums go through loops that stay loops (one copy of their body) rather than
  // repeated or unrolled code: the shader compiles several times faster.
  pair: u32,
  sums: u32,
}

@group(0) @binding(0) var<storage, read> ref_pic: array<u32>;
@group(0) @binding(1) var<storage, read> dis_pic: array<u32>;
@group(0) @binding(2) var<storage, read_write> terms: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> weights: array<u32>;

fn sample_of(word: u32, i: u32) -> u32 {
  if (BIT_DEPTH == 8u) {
    return (word >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (word >> ((i & 1u) * 16u)) & 0xffffu;
}

fn ref_sample(i: u32) -> i32 {
  let per = select(2u, 4u, BIT_DEPTH == 8u);
  return i32(sample_of(ref_pic[params.plane_word + i / per], i));
}

fn dis_sample(i: u32) -> i32 {
  let per = select(2u, 4u, BIT_DEPTH == 8u);
  return i32(sample_of(dis_pic[params.plane_word + i / per], i));
}

// A lifting step's product: the multiply and rounding add wrap as the C++'s uint32 does,
// then an arithmetic shift of the int32.
fn lift(v: i32, k: u32, round: u32, shift: u32) -> i32 {
  return bitcast<i32>(bitcast<u32>(v) * k + round) >> shift;
}

// Halving toward zero.
fn half(v: i32) -> i32 {
  return (v + select(0, 1, v < 0)) >> 1u;
}

// The forward 8-point DCT by lifting (psnr_hvs.cpp's dct8), outputs in its order.
fn dct8(x: array<i32, 8>) -> array<i32, 8> {
  var s0 = x[0];
  var s1 = x[1];
  var s2 = x[2];
  var s3 = x[3];
  var s4 = x[4];
  var s5 = x[5];
  var s6 = x[6];
  var s7 = x[7];
  s7 = s0 - s7;
  let s7h = half(s7);
  s0 = s0 - s7h;
  s1 = s1 + s6;
  let s1h = half(s1);
  s6 = s6 - s1h;
  s5 = s2 - s5;
  s2 = s2 - half(s5);
  s3 = s3 + s4;
  let s3h = half(s3);
  s4 = s3h - s4;
  s0 = s0 + s3h;
  s3 = s0 - s3;
  s2 = s1h - s2;
  s1 = s2 - s1;
  s0 = s0 - lift(s1, 13573u, 16384u, 15u);
  s1 = s1 + lift(s0, 11585u, 8192u, 14u);
  s0 = s0 - lift(s1, 13573u, 16384u, 15u);
  s3 = s3 - lift(s2, 21895u, 16384u, 15u);
  s2 = s2 + lift(s3, 15137u, 8192u, 14u);
  s3 = s3 - lift(s2, 21895u, 16384u, 15u);
  s5 = s5 + lift(s6, 19195u, 16384u, 15u);
  s6 = s6 + lift(s5, 11585u, 8192u, 14u);
  s5 = s5 - lift(s6, 7489u, 4096u, 13u);
  s4 = half(s6) - s4;
  s6 = s6 - s4;
  s5 = s7h - s5;
  s7 = s7 - s5;
  s4 = s4 + lift(s7, 3227u, 16384u, 15u);
  s7 = s7 - lift(s4, 6393u, 16384u, 15u);
  s4 = s4 + lift(s7, 3227u, 16384u, 15u);
  s6 = s6 + lift(s5, 2485u, 4096u, 13u);
  s5 = s5 - lift(s6, 18205u, 16384u, 15u);
  s6 = s6 + lift(s5, 2485u, 4096u, 13u);
  return array<i32, 8>(s0, s7, s2, s5, s1, s6, s3, s4);
}

// The 2-D DCT of a row-major block: each column, then each row of the column outputs.
fn dct8x8(b: array<i32, 64>) -> array<i32, 64> {
  var columns: array<i32, 64>; // columns[c * 8 + k]: coefficient k of column c
  for (var c = 0u; c < 8u; c = c + 1u) {
    var v: array<i32, 8>;
    for (var k = 0u; k < 8u; k = k + 1u) {
      v[k] = b[k * 8u + c];
    }
    let o = dct8(v);
    for (var k = 0u; k < 8u; k = k + 1u) {
      columns[c * 8u + k] = o[k];
    }
  }
  var out: array<i32, 64>;
  for (var k = 0u; k < 8u; k = k + 1u) {
    var v: array<i32, 8>;
    for (var c = 0u; c < 8u; c = c + 1u) {
      v[c] = columns[c * 8u + k];
    }
    let o = dct8(v);
    for (var j = 0u; j < 8u; j = j + 1u) {
      out[k * 8u + j] = o[j];
    }
  }
  return out;
}

fn quarter_of(k: u32) -> u32 {
  return ((k / 8u) >> 2u) + (((k % 8u) >> 2u) << 1u);
}

// psnr_hvs.cpp's varianceRatio, float for float: sums[0] is the whole block's, sums[1 + q]
// quarter q's (each sample goes into its two sums in the C++'s order, which is immaterial:
// they are independent).
fn variance_ratio(b: array<i32, 64>) -> u32 {
  var mean = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
  for (var k = 0u; k < 64u; k = k + 1u) {
    let v = f32_from_i32(b[k]);
    let q = 1u + quarter_of(k);
    for (var j = 0u; j < params.pair; j = j + 1u) {
      let at = select(q, 0u, j == 0u);
      mean[at] = f32_add(mean[at], v);
    }
  }
  for (var j = 0u; j < params.sums; j = j + 1u) {
    mean[j] = f32_div(mean[j], select(F16, F64, j == 0u));
  }
  var variance = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
  for (var k = 0u; k < 64u; k = k + 1u) {
    let v = f32_from_i32(b[k]);
    let q = 1u + quarter_of(k);
    for (var j = 0u; j < params.pair; j = j + 1u) {
      let at = select(q, 0u, j == 0u);
      let d = f32_sub(v, mean[at]);
      variance[at] = f32_add(variance[at], f32_mul(d, d));
    }
  }
  for (var j = 0u; j < params.sums; j = j + 1u) {
    variance[j] = f32_mul(variance[j], select(N15, N63, j == 0u));
  }
  if (!f32_gt(variance[0], 0u)) {
    return variance[0];
  }
  var quarters = variance[1];
  for (var j = 2u; j < params.sums; j = j + 1u) {
    quarters = f32_add(quarters, variance[j]);
  }
  return f32_div(quarters, variance[0]);
}

// psnr_hvs.cpp's maskingLevel: float(sqrt((double)(energy * ratio)) / 32), which is the
// float square root scaled by 2^-5 (exact: the root of a float is far from subnormal).
fn masking_level(c: array<i32, 64>, ratio: u32) -> u32 {
  let mask_at = params.table * 128u + 64u;
  var energy = 0u;
  for (var k = 1u; k < 64u; k = k + 1u) {
    let square = bitcast<i32>(bitcast<u32>(c[k]) * bitcast<u32>(c[k]));
    energy = f32_add(energy, f32_mul(f32_from_i32(square), weights[mask_at + k]));
  }
  let root = f32_sqrt(f32_mul(energy, ratio));
  let e = root & 0x7f800000u;
  if (e == 0u || e == 0x7f800000u) {
    return root; // zero, infinity or NaN: unchanged by / 32
  }
  return root - (5u << 23u);
}

@compute @workgroup_size(64)
fn block_terms(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let block = id.x;
  if (block >= params.blocks) {
    return;
  }
  let x = (block % params.blocks_x) * STEP;
  let y = (block / params.blocks_x) * STEP;
  // pair[0]: the reference block, pair[1]: the distorted one; each's masking level.
  var pair: array<array<i32, 64>, 2>;
  for (var i = 0u; i < 8u; i = i + 1u) {
    let row = (y + i) * params.width + x;
    for (var j = 0u; j < 8u; j = j + 1u) {
      pair[0][i * 8u + j] = ref_sample(row + j);
      pair[1][i * 8u + j] = dis_sample(row + j);
    }
  }
  var masks: array<u32, 2>;
  for (var p = 0u; p < params.pair; p = p + 1u) {
    let ratio = variance_ratio(pair[p]);
    pair[p] = dct8x8(pair[p]);
    masks[p] = masking_level(pair[p], ratio);
  }
  var mask = masks[0];
  if (f32_gt(masks[1], mask)) {
    mask = masks[1];
  }
  let csf_at = params.table * 128u;
  let out = params.dst_word + block * 64u;
  for (var k = 0u; k < 64u; k = k + 1u) {
    var err = f32_from_i32(abs(pair[0][k] - pair[1][k]));
    if (k != 0u) {
      let threshold = f32_div(mask, weights[csf_at + 64u + k]);
      err = select(f32_sub(err, threshold), 0u, f32_lt(err, threshold));
    }
    let weighted = f32_mul(err, weights[csf_at + k]);
    terms[out + k] = f32_mul(weighted, weighted);
  }
}
