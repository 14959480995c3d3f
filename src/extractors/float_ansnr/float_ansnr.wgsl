// #include "../common/float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
// #include "../common/serial-rows.wgsl"
//
// float_ansnr on the GPU (driven by float_ansnr-gpu.ts), bit for bit as float_ansnr.cpp does
// it: every float operation is lib/f32.wgsl's integer-exact one (no FMA contraction, no
// flushed subnormals), in the C++'s order.
//   to_float:  a picture's luma -> floats on the 8-bit scale, offset by -128
//   filter_2d: a float image -> its 2-D filter (taps x taps, weights row-major): per output
//              sample each kernel row summed in float, then the rows; edges mirrored with
//              the edge sample repeated (-1 -> 1, n -> n - 1)
//   energies:  per row, the row's float sums of ref^2 and (ref - dis)^2, left to right, by
//              one invocation; the squares formed as workgroup tiles are loaded
//              (serial-rows.wgsl)
//   total:     one invocation: those row sums added top to bottom, in float (loaded through
//              workgroup memory: serial-rows.wgsl); the two floats' bit patterns written as
//              the instance's two accumulators
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

var<workgroup> signal_tile: array<u32, SR_ROWS * SR_TILE>;
var<workgroup> noise_tile: array<u32, SR_ROWS * SR_TILE>;

// energies' loads of tile c0 for invocation lid: the filtered ref and dis words (0 outside).
fn energy_words(group: u32, lid: u32, c0: u32, r: ptr<function, array<u32, SR_PER>>, d: ptr<function, array<u32, SR_PER>>) {
  let w = params.width;
  for (var k = 0u; k < SR_PER; k = k + 1u) {
    let p = sr_place(lid, k);
    let y = group * SR_ROWS + p.x;
    let x = c0 + p.y;
    var vr = 0u;
    var vd = 0u;
    if (y < params.height && x < w) {
      vr = work[params.ref_word + y * w + x];
      vd = work[params.dis_word + y * w + x];
    }
    (*r)[k] = vr;
    (*d)[k] = vd;
  }
}

@compute @workgroup_size(SR_THREADS)
fn energies(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  f32_native_begin(params.width);
  let w = params.width;
  let y = group.x * SR_ROWS + lid;
  let sums = lid < SR_ROWS && y < params.height;
  var r: array<u32, SR_PER>;
  var d: array<u32, SR_PER>;
  energy_words(group.x, lid, 0u, &r, &d);
  var signal = 0u;
  var noise = 0u;
  for (var c0 = 0u; c0 < w; c0 = c0 + SR_TILE) {
    workgroupBarrier(); // the previous tile's adds are done
    for (var k = 0u; k < SR_PER; k = k + 1u) {
      let p = sr_place(lid, k);
      let diff = f32_sub(r[k], d[k]);
      signal_tile[sr_word(p.x, p.y)] = f32_mul(r[k], r[k]);
      noise_tile[sr_word(p.x, p.y)] = f32_mul(diff, diff);
    }
    workgroupBarrier();
    if (c0 + SR_TILE < w) {
      energy_words(group.x, lid, c0 + SR_TILE, &r, &d);
    }
    if (sums) {
      let n = min(SR_TILE, w - c0);
      for (var c = 0u; c < n; c = c + 1u) {
        signal = f32_add_serial(signal, signal_tile[sr_word(lid, c)]);
        noise = f32_add_serial(noise, noise_tile[sr_word(lid, c)]);
      }
    }
  }
  if (sums) {
    work[params.dst_word + 2u * y] = signal;
    work[params.dst_word + 2u * y + 1u] = noise;
  }
}

var<workgroup> chunk: array<u32, SR_CHUNK>;

@compute @workgroup_size(SR_THREADS)
fn total(@builtin(local_invocation_index) lid: u32) {
  // Two words a row (signal, noise): SR_CHUNK / 2 rows a chunk.
  let words = 2u * params.height;
  var signal = 0u;
  var noise = 0u;
  for (var i0 = 0u; i0 < words; i0 = i0 + SR_CHUNK) {
    workgroupBarrier(); // the previous chunk's adds are done
    for (var i = lid; i < SR_CHUNK; i = i + SR_THREADS) {
      var v = 0u;
      if (i0 + i < words) {
        v = work[params.src_word + i0 + i];
      }
      chunk[i] = v;
    }
    workgroupBarrier();
    if (lid == 0u) {
      let n = min(SR_CHUNK, words - i0);
      for (var i = 0u; i < n; i = i + 2u) {
        signal = f32_add_serial(signal, chunk[i]);
        noise = f32_add_serial(noise, chunk[i + 1u]);
      }
    }
  }
  if (lid == 0u) {
    let at = params.out_word;
    stats[at] = signal;
    stats[at + 1u] = 0u;
    stats[at + 2u] = noise;
    stats[at + 3u] = 0u;
  }
}
