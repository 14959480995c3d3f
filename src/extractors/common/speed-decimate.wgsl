// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/luma.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
//
// SpEED's per-pixel work on the GPU (driven by speed-decimate-gpu.ts, for speed_chroma and
// speed_temporal): SpeedScorer::decimate() of speed-core.cpp, bit for bit, for up to two
// planes of a picture (speed_chroma: U and V of the reference, then of the distorted) or, with
// DIFFERENCE, for the difference of two pictures' plane (speed_temporal: the previous frame's
// luma minus this one's, as DifferenceSpeedSource subtracts the two samples in float), with a
// prescale of none, nearest or bilinear. Every float operation is lib/f32.wgsl's
// integer-exact one (no FMA contraction, no flushed subnormals), in the C++'s order:
//   antialias:  one picture's planes (prescaled: resampled as float-scale.h's scalePlane,
//               from the C++'s per-column and per-row tables of source samples and bilinear
//               fractions, at the samples the filter reads); per kept sample
//               (16 i, 16 j), for each of the antialias filter's columns 16 j - r + k2
//               (mirrored, the edge not repeated) the
//               vertical pass over rows 16 i - r + k (mirrored), each tap added in filter
//               order to a float that starts at 0, then the horizontal pass over those
//               columns' values the same way (antialiasDecimated: it evaluates the filter at
//               the kept samples only). Samples are the C++'s PictureSample: s + -128 at 8
//               bits, s / 2^(depth - 8) + -128 above (the division by a power of two is exact,
//               so the product by its reciprocal is the same float); with DIFFERENCE, pic's
//               sample minus pic_minus's (the resampling then weighs the differences, as
//               scalePlane does the difference plane).
//   local_mean: per decimated sample, the local-mean filter (vertical over the mirrored rows
//               of its mirrored columns, then horizontal, as filterPlane), and the sample minus
//               it, written to the instance's stats words: plane p at word
//               out_word + p * dw * dh, row-major (SpeedScorer::unpackDecimated reads it so).
// Both entry points share each output's work among a workgroup's invocations (below): the
// serial chain an output waits on is about 2n float ops (n taps) instead of n^2, which is what
// a GPU's time is (an invocation per output alone was few, long, latency-bound chains: 1.3 ms
// a 1080p frame on an H100). lavapipe, which runs every lane anyway, pays for the extra
// workgroups and barriers instead: slower there.

override BIT_DEPTH: u32 = 8u;
// Whether a sample is pic's minus pic_minus's (speed_temporal's frame differences); a
// pipeline of its own, as SCALED.
override DIFFERENCE: bool = false;
// Whether the planes are resampled (a pipeline of its own: without it the resampling code is
// dead at compile time, and lavapipe's compile of the plain pipeline stays as small).
override SCALED: bool = false;

const MINUS_128: u32 = 0xc3000000u;

struct Params {
  word0: u32,      // antialias: the first word (in the picture) of the plane workgroups z = 0 read
  word1: u32,      // antialias: the plane's for z = 1 (speed_chroma's Cr; unused with one plane)
  stride: u32,     // antialias: the planes' row length in samples (as uploaded)
  width: u32,      // the plane SpEED filters (the prescaled size)
  height: u32,
  dw: u32,         // the decimated planes' size
  dh: u32,
  aa_taps: u32,    // the antialias filter's length (at taps[0])
  mean_taps: u32,  // the local-mean filter's length (at taps[aa_taps])
  scale_bits: u32, // antialias: 1 / 2^(bitDepth - 8) as a float (unused at 8 bits)
  first: u32,      // antialias: the plane z = 0 writes; z = 1 writes first + 2 (speed_chroma:
                   // 0 and 2 for the reference's U and V, 1 and 3 for the distorted's)
  out_word: u32,   // local_mean: the instance's first stats word
  method: u32,     // antialias, SCALED: the prescale: 1 nearest, 2 bilinear
  col_word: u32,   // antialias, SCALED: per scaled column, (first, second, 1 - fraction, fraction) in taps
  row_word: u32,   // the same per scaled row
  planes: u32,     // local_mean: the decimated planes (workgroups z)
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> taps: array<u32>;
// DIFFERENCE: the picture whose samples are subtracted (the same layout as pic).
@group(0) @binding(5) var<storage, read> pic_minus: array<u32>;

// Sample i of a picture's plane starting at word `word`, as a float minus 128.
fn sample_float(words: ptr<storage, array<u32>, read>, word: u32, i: u32) -> u32 {
  if (BIT_DEPTH == 8u) {
    return f32_add(f32_of_sample(luma_sample_8(words, 4u * word + i)), MINUS_128);
  }
  return f32_add(f32_mul(f32_of_sample(luma_sample_16(words, 2u * word + i)), params.scale_bits), MINUS_128);
}

// Sample (x, y) of the plane starting at word `word`: pic's, or with DIFFERENCE pic's minus
// pic_minus's.
fn plane_float(word: u32, x: u32, y: u32) -> u32 {
  let i = y * params.stride + x;
  let s = sample_float(&pic, word, i);
  if (DIFFERENCE) {
    return f32_sub(s, sample_float(&pic_minus, word, i));
  }
  return s;
}

// Sample (x, y) of the plane the antialias filter reads: the plane, or its resampling
// (scalePlane's nearest sample, or its bilinear sum: per corner, in row order, the product of
// the row's and the column's weight ((1 - f) or f), times the sample, the first not added to
// 0). One call of each soft-float op in a loop, not four copies: lavapipe compiles every
// inlined copy (its compile time and memory grow with them).
fn scaled_float(word: u32, x: u32, y: u32) -> u32 {
  var corners = 1u;
  if (SCALED && params.method == 2u) {
    corners = 4u;
  }
  let cx = params.col_word + 4u * x;
  let cy = params.row_word + 4u * y;
  var v = 0u;
  for (var c = 0u; c < corners; c = c + 1u) {
    var sx = x;
    var sy = y;
    if (SCALED) {
      sx = taps[cx + (c & 1u)];
      sy = taps[cy + (c >> 1u)];
    }
    let s = plane_float(word, sx, sy);
    if (corners == 1u) {
      return s;
    }
    let term = f32_mul(f32_mul(taps[cy + 2u + (c >> 1u)], taps[cx + 2u + (c & 1u)]), s);
    if (c == 0u) {
      v = term;
    } else {
      v = f32_add(v, term);
    }
  }
  return v;
}

// The antialias filter's longest window: windowLength(1, ks) at the largest known kernel scale
// (360/97: 35 taps); speed-decimate-gpu.ts refuses longer ones.
const MAX_AA_TAPS: u32 = 35u;
// A workgroup per run of aa_outs() kept samples of one row and plane; its invocations share
// the filter's work. speed-decimate-gpu.ts sets it (256 where the adapter allows: with 9 taps,
// 3 outputs, 243 products in one round).
override AA_GROUP: u32 = 256u;

// antialias: the tap products taps[k] * sample at [o * n * n + k * n + k2] (output o, row k,
// column k2), then each column's vertical sum times its tap at [o * n + k2]. Both fit: a run
// of more than one output has outs * n * n <= AA_GROUP <= 256 products, one output at most
// MAX_AA_TAPS^2; the filter has at least 3 taps, so at most 85 column sums.
var<workgroup> aa_products: array<u32, 1225>; // MAX_AA_TAPS^2
var<workgroup> aa_columns: array<u32, 86>;

// How many kept samples an antialias workgroup computes (speed-decimate-gpu.ts sizes the dispatch so).
fn aa_outs(n: u32) -> u32 {
  return max(1u, AA_GROUP / (n * n));
}

// The output's float ops are the serial code's, each on the same operands, so the same bits;
// only the independent ones run side by side: the n x n products (and the samples they read),
// then the n column sums (each adding its rows in k order), then one invocation per output
// adds its columns in k2 order. Every invocation reaches both barriers (the work is guarded
// instead).
@compute @workgroup_size(AA_GROUP, 1, 1)
fn antialias(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  // Native products where exact (lib/f32.wgsl: a run-time uniform below 2^31).
  f32_native_begin(params.width);
  let dw = params.dw;
  let dh = params.dh;
  let n = params.aa_taps;
  let outs = aa_outs(n);
  // Uniform across the workgroup (workgroup id and uniforms), so the barriers below stay in
  // uniform control flow.
  let valid = g.y < dh && g.z < 2u && n >= 3u && n <= MAX_AA_TAPS;
  var word = params.word0;
  if (g.z == 1u) {
    word = params.word1;
  }
  let radius = i32(n / 2u);
  let top = i32(g.y * 16u) - radius;
  let first = g.x * outs;
  let w = i32(params.width);
  let h = i32(params.height);
  if (valid) {
    // Consecutive invocations read neighbouring columns of one row.
    for (var p = t; p < outs * n * n; p = p + AA_GROUP) {
      let o = p / (n * n);
      let r = p - o * n * n;
      let k = r / n;
      let k2 = r - k * n;
      let x = first + o;
      if (x < dw) {
        let col = mirror_skip_edge(i32(x * 16u) - radius + i32(k2), w);
        let row = mirror_skip_edge(top + i32(k), h);
        aa_products[p] = f32_mul(taps[k], scaled_float(word, col, row));
      }
    }
  }
  workgroupBarrier();
  if (valid) {
    for (var q = t; q < outs * n; q = q + AA_GROUP) {
      let o = q / n;
      let k2 = q - o * n;
      if (first + o < dw) {
        var vertical = 0u;
        for (var k = 0u; k < n; k = k + 1u) {
          vertical = f32_add(vertical, aa_products[o * n * n + k * n + k2]);
        }
        aa_columns[q] = f32_mul(taps[k2], vertical);
      }
    }
  }
  workgroupBarrier();
  if (valid && t < outs && first + t < dw) {
    var acc = 0u;
    for (var k2 = 0u; k2 < n; k2 = k2 + 1u) {
      acc = f32_add(acc, aa_columns[t * n + k2]);
    }
    let plane = 2u * g.z + params.first;
    work[plane * dw * dh + g.y * dw + first + t] = acc;
  }
}

// local_mean: a workgroup per run of mean_outs() decimated samples of one row and plane; its
// products at [o * n * n + k * n + k2] (output o, row k, column k2), its column sums (times
// their taps) at [o * n + k2]. The filter's length is at most 11 (speed-decimate-gpu.ts checks),
// so n * n <= MEAN_GROUP and a run's products fit.
const MEAN_GROUP: u32 = 128u;
var<workgroup> mean_products: array<u32, MEAN_GROUP>;
var<workgroup> mean_columns: array<u32, MEAN_GROUP>;

// How many outputs a local_mean workgroup computes (speed-decimate-gpu.ts sizes the dispatch so).
fn mean_outs(n: u32) -> u32 {
  return max(1u, MEAN_GROUP / (n * n));
}

// As antialias: the serial filter's float ops on the same operands, the independent ones side
// by side (products, then column sums in k order, then each output's columns in k2 order and
// the difference); every invocation reaches both barriers.
@compute @workgroup_size(128, 1, 1)
fn local_mean(@builtin(workgroup_id) g: vec3<u32>, @builtin(local_invocation_index) t: u32) {
  // Native products where exact (lib/f32.wgsl: a run-time uniform below 2^31).
  f32_native_begin(params.width);
  let dw = params.dw;
  let dh = params.dh;
  let n = params.mean_taps;
  let at = params.aa_taps;
  let outs = mean_outs(n);
  let valid = g.y < dh && g.z < params.planes && n * n <= MEAN_GROUP;
  let base = g.z * dw * dh;
  let radius = i32(n / 2u);
  let top = i32(g.y) - radius;
  let first = g.x * outs;
  if (valid) {
    for (var p = t; p < outs * n * n; p = p + MEAN_GROUP) {
      let o = p / (n * n);
      let r = p - o * n * n;
      let k = r / n;
      let k2 = r - k * n;
      let x = first + o;
      if (x < dw) {
        let col = mirror_skip_edge(i32(x) - radius + i32(k2), i32(dw));
        let row = mirror_skip_edge(top + i32(k), i32(dh));
        mean_products[p] = f32_mul(taps[at + k], work[base + row * dw + col]);
      }
    }
  }
  workgroupBarrier();
  if (valid) {
    for (var q = t; q < outs * n; q = q + MEAN_GROUP) {
      let o = q / n;
      let k2 = q - o * n;
      if (first + o < dw) {
        var vertical = 0u;
        for (var k = 0u; k < n; k = k + 1u) {
          vertical = f32_add(vertical, mean_products[o * n * n + k * n + k2]);
        }
        mean_columns[q] = f32_mul(taps[at + k2], vertical);
      }
    }
  }
  workgroupBarrier();
  if (valid && t < outs && first + t < dw) {
    var mean = 0u;
    for (var k2 = 0u; k2 < n; k2 = k2 + 1u) {
      mean = f32_add(mean, mean_columns[t * n + k2]);
    }
    let i = g.y * dw + first + t;
    stats[params.out_word + base + i] = f32_sub(work[base + i], mean);
  }
}
