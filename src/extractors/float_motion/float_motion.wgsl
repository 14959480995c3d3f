// #include "../common/float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
// #include "../common/serial-rows.wgsl"
//
// float_motion's own score on the GPU (driven by float_motion-gpu.ts), bit for bit as
// float_motion.cpp computes it: per plane (luma; with motion_add_uv also Cb and Cr) and scale
// (0; with motion_add_scale1 also 1, the blurred planes resampled to half size), every float
// operation lib/f32.wgsl's integer-exact one (no FMA contraction, no flushed subnormals), in
// the C++'s order.
//   to_float:   a picture's plane -> floats on the 8-bit scale, offset by -128
//   blur_rows:  the vertical pass of the separable filter (each tap added in filter order to
//               a float that starts at 0; edges mirrored without repeating: -1 -> 1, n -> n - 2)
//   blur_cols:  the horizontal pass, on the vertical pass's output
//   row_sums:   per row, |prev - cur| added left to right, each in double onto the float
//               running sum and rounded back to float (fabs's promotion: that is the float
//               sum of the two floats); the rows' chains through workgroup tiles
//               (serial-rows.wgsl), the differences formed as the tiles are loaded
//   downscale:  a blurred plane resampled bilinearly to the scale-1 size (float-scale.h's
//               scalePlane: per output, the four corners in row order, each the product of
//               the row's and the column's weight ((1 - f) or f) times the sample, the first
//               not added to 0), from the host's per-column and per-row tables of source
//               samples and fractions (in taps, after the filter). As libvmaf: it keeps
//               every plane's blurred floats at the luma's row stride but resamples them at
//               the stride of the plane's own width, so for subsampled chroma a sample (x, y)
//               it reads is element y * read_stride + x of a buffer of buffer_stride rows
//               holding the plane's rows, 0 past each row's end (float_motion.cpp's
//               asScalerReads); for luma and 4:4:4 the strides are one and it is (x, y)
//   row_total:  the row sums added top to bottom in float by one invocation (loaded through
//               workgroup memory), into work (a plane and scale other than the last)
//   total:      the same for the last plane and scale; writes the instance's accumulators: 1
//               (there was a previous frame), then the `count` sums' bits, the earlier ones
//               copied from work (row_total's), the last this pass's
//   no_previous: the stream's first frame: 0 and 0s
// The sums are sequential, as the C++'s: exact reproductions, not reductions in another order.

override BIT_DEPTH: u32 = 8u;

struct Params {
  src_word: u32,   // to_float: the plane in the picture; blur_*: the image in work
  dst_word: u32,   // to_float, blur_*: the image written in work; row_sums: the row sums
  width: u32,
  height: u32,
  taps: u32,       // blur_*: the filter's length
  scale_bits: u32, // to_float: 1 / 2^(bitDepth - 8) as a float
  a_word: u32,     // row_sums: the previous frame's blurred image; total: the row sums
  b_word: u32,     // row_sums: this frame's
  out_word: u32,   // total, no_previous: the instance's first stats word
  count: u32,      // total, no_previous: the sums (planes times scales); total: the earlier
                   // ones at b_word in work
  src_width: u32,  // downscale: the blurred plane's width (src_word); a_word, b_word: the column
                   // and row tables in taps: (first, second, 1 - f, f) per output column / row
  read_stride: u32,   // downscale: libvmaf's strides (below): its resampler's for this plane,
  buffer_stride: u32, // and its buffer's (the luma's)
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> taps: array<u32>;

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  luma_to_float(&work, id);
}

@compute @workgroup_size(16, 16)
fn blur_rows(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  let h = params.height;
  if (id.x >= w || id.y >= h) {
    return;
  }
  let radius = i32(params.taps / 2u);
  var acc = 0u;
  for (var k = 0u; k < params.taps; k = k + 1u) {
    let row = mirror_skip_edge(i32(id.y) - radius + i32(k), i32(h));
    acc = f32_add(acc, f32_mul(taps[k], work[params.src_word + row * w + id.x]));
  }
  work[params.dst_word + id.y * w + id.x] = acc;
}

@compute @workgroup_size(16, 16)
fn blur_cols(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  let h = params.height;
  if (id.x >= w || id.y >= h) {
    return;
  }
  let radius = i32(params.taps / 2u);
  let base = params.src_word + id.y * w;
  var acc = 0u;
  for (var k = 0u; k < params.taps; k = k + 1u) {
    let col = mirror_skip_edge(i32(id.x) - radius + i32(k), i32(w));
    acc = f32_add(acc, f32_mul(taps[k], work[base + col]));
  }
  work[params.dst_word + id.y * w + id.x] = acc;
}

var<workgroup> tile: array<u32, SR_ROWS * SR_TILE>;

// row_sums' loads of tile c0 for invocation lid: the previous and this frame's words (0 outside).
fn diff_words(group: u32, lid: u32, c0: u32, a: ptr<function, array<u32, SR_PER>>, b: ptr<function, array<u32, SR_PER>>) {
  let w = params.width;
  for (var k = 0u; k < SR_PER; k = k + 1u) {
    let p = sr_place(lid, k);
    let y = group * SR_ROWS + p.x;
    let x = c0 + p.y;
    var va = 0u;
    var vb = 0u;
    if (y < params.height && x < w) {
      va = work[params.a_word + y * w + x];
      vb = work[params.b_word + y * w + x];
    }
    (*a)[k] = va;
    (*b)[k] = vb;
  }
}

@compute @workgroup_size(SR_THREADS)
fn row_sums(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let w = params.width;
  let y = group.x * SR_ROWS + lid;
  let sums = lid < SR_ROWS && y < params.height;
  var a: array<u32, SR_PER>;
  var b: array<u32, SR_PER>;
  diff_words(group.x, lid, 0u, &a, &b);
  var sum = 0u;
  for (var c0 = 0u; c0 < w; c0 = c0 + SR_TILE) {
    workgroupBarrier(); // the previous tile's adds are done
    for (var k = 0u; k < SR_PER; k = k + 1u) {
      let p = sr_place(lid, k);
      // |diff| as a float: fabs of the double promotion only clears the sign, as here.
      tile[sr_word(p.x, p.y)] = f32_sub(a[k], b[k]) & 0x7fffffffu;
    }
    workgroupBarrier();
    if (c0 + SR_TILE < w) {
      diff_words(group.x, lid, c0 + SR_TILE, &a, &b);
    }
    if (sums) {
      let n = min(SR_TILE, w - c0);
      for (var c = 0u; c < n; c = c + 1u) {
        sum = f32_add_serial(sum, tile[sr_word(lid, c)]);
      }
    }
  }
  if (sums) {
    work[params.dst_word + y] = sum;
  }
}

// A table entry holding a source sample's index (as a float: exact, it is small).
fn table_index(word: u32) -> u32 {
  return u32(bitcast<f32>(taps[word]));
}

@compute @workgroup_size(16, 16)
fn downscale(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  if (id.x >= w || id.y >= params.height) {
    return;
  }
  let cx = params.a_word + 4u * id.x;
  let cy = params.b_word + 4u * id.y;
  // One call of each soft-float op in a loop, not four copies (lavapipe compiles every
  // inlined copy).
  var v = 0u;
  for (var c = 0u; c < 4u; c = c + 1u) {
    let sx = table_index(cx + (c & 1u));
    let sy = table_index(cy + (c >> 1u));
    let e = sy * params.read_stride + sx;
    let row = e / params.buffer_stride;
    let col = e - row * params.buffer_stride;
    var s = 0u;
    if (col < params.src_width) {
      s = work[params.src_word + row * params.src_width + col];
    }
    let term = f32_mul(f32_mul(taps[cy + 2u + (c >> 1u)], taps[cx + 2u + (c & 1u)]), s);
    if (c == 0u) {
      v = term;
    } else {
      v = f32_add(v, term);
    }
  }
  work[params.dst_word + id.y * w + id.x] = v;
}

var<workgroup> chunk: array<u32, SR_CHUNK>;

// The float sum, top to bottom, of the params.height row sums at a_word in work; invocation
// 0's is the sum. Every invocation of the workgroup calls it (it has barriers).
fn rows_total(lid: u32) -> u32 {
  let h = params.height;
  var sum = 0u;
  for (var i0 = 0u; i0 < h; i0 = i0 + SR_CHUNK) {
    workgroupBarrier(); // the previous chunk's adds are done
    for (var i = lid; i < SR_CHUNK; i = i + SR_THREADS) {
      var v = 0u;
      if (i0 + i < h) {
        v = work[params.a_word + i0 + i];
      }
      chunk[i] = v;
    }
    workgroupBarrier();
    if (lid == 0u) {
      let n = min(SR_CHUNK, h - i0);
      for (var i = 0u; i < n; i = i + 1u) {
        sum = f32_add_serial(sum, chunk[i]);
      }
    }
  }
  return sum;
}

@compute @workgroup_size(SR_THREADS)
fn row_total(@builtin(local_invocation_index) lid: u32) {
  let sum = rows_total(lid);
  if (lid == 0u) {
    work[params.dst_word] = sum;
  }
}

@compute @workgroup_size(SR_THREADS)
fn total(@builtin(local_invocation_index) lid: u32) {
  let sum = rows_total(lid);
  if (lid == 0u) {
    let at = params.out_word;
    let last = params.count;
    stats[at] = 1u;
    stats[at + 1u] = 0u;
    for (var i = 1u; i < last; i = i + 1u) {
      stats[at + 2u * i] = work[params.b_word + i - 1u];
      stats[at + 2u * i + 1u] = 0u;
    }
    stats[at + 2u * last] = sum;
    stats[at + 2u * last + 1u] = 0u;
  }
}

@compute @workgroup_size(1)
fn no_previous() {
  let at = params.out_word;
  for (var i = 0u; i <= 2u * params.count + 1u; i = i + 1u) {
    stats[at + i] = 0u;
  }
}
