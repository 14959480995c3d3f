// #include "../common/float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
// #include "../common/serial-rows.wgsl"
//
// float_vif's per-pixel work (float_vif.cpp's compute() and statistic()) on the GPU, driven
// by float_vif-gpu.ts, bit for bit as the C++ does it: every float product, sum and quotient
// is lib/f32.wgsl's (integer arithmetic, so no contraction into FMAs and no flushed
// subnormals can change a bit), every double step f64.wgsl's, in the C++'s order. What
// comes out per row of each scale is the row's float sums of the numerator and denominator
// terms, summed in column order by one invocation, as the C++ sums them; the sums over rows
// and scales (float, then double) are the C++ extractor's finishStats on the host.
//
// Planes are floats (bit patterns), rows packed, in `images`; Params places them.
//   to_float:      a picture's luma -> float plane, offset by -128 (floatPlane's scaling)
//   vertical:      ref and dis planes -> the vertical filter of every `step`-th row: of
//                  ref and dis (decimation, 2 quantities), or of ref, dis, ref^2, dis^2
//                  and ref*dis (the statistic, 5 quantities), into `vert`
//   decimate:      those 2 rows -> the horizontal filter at every second column: the next
//                  scale's ref and dis planes
//   statistic:     the 5 vertically filtered quantities -> their horizontal filter, then the
//                  per-pixel numerator and denominator terms, into `terms`
//   row_sums:      each row's terms summed in float, into the stats slot (num low word,
//                  den high word); the terms loaded through workgroup tiles (serial-rows.wgsl)

const EPS: u32 = 0x2edbe6ffu; // 1.0e-10f
const ONE: u32 = 0x3f800000u; // 1.0f
// The fast log2's polynomial in the mantissa (float_vif.cpp's kPoly), highest power first.
const LOG2_POLY = array<u32, 9>(
  0xbc4f9cb1u, 0x3d84cb74u, 0xbe20d169u, 0x3e83ab7du, 0xbeb52559u, 0x3ef5d3c9u, 0xbf38a80eu, 0x3fb8aa39u, 0x00000000u);

override BIT_DEPTH: u32 = 8u;

struct Params {
  src_word: u32,       // first word of the ref plane (or the picture's luma, to_float)
  src2_word: u32,      // first word of the dis plane
  width: u32,          // the source planes' size
  height: u32,
  dst_word: u32,       // first word written (in images, vert or the stats slot)
  dst2_word: u32,      // decimate: the dis plane's
  out_width: u32,      // invocations in x (columns written)
  out_height: u32,     // invocations in y (rows written)
  step: u32,           // vertical: rows taken (1, or 2 when decimating)
  taps: u32,           // the filter's length
  filter_at: u32,      // its first tap in `filters`
  quantities: u32,     // vertical: 2 or 5
  scale_bits: u32,     // to_float: 1 / 2^k as a float (higher depths' division)
  sigma_max_inv: u32,  // statistic: float
  gain_limit: u32,     // statistic: float
  pad0: u32,
  nsq: vec2<u32>,      // statistic: the double sigma_nsq
  pad1: vec2<u32>,
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> images: array<u32>;
@group(0) @binding(2) var<storage, read_write> vert: array<u32>;
@group(0) @binding(3) var<storage, read_write> terms: array<u32>;
@group(0) @binding(4) var<storage, read_write> stats: array<u32>;
@group(0) @binding(5) var<uniform> params: Params;
@group(0) @binding(6) var<storage, read> filters: array<u32>;

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  luma_to_float(&images, id);
}

// Row out_y (source row out_y * step), column x: each quantity's taps in filter order,
// accumulated in float from 0; squares and the product are formed before the weighting.
@compute @workgroup_size(16, 16)
fn vertical(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  if (id.x >= w || id.y >= params.out_height) {
    return;
  }
  let radius = i32(params.taps / 2u);
  let y = i32(id.y * params.step);
  let nq = params.quantities;
  var acc = array<u32, 5>(0u, 0u, 0u, 0u, 0u);
  for (var k = 0u; k < params.taps; k = k + 1u) {
    let row = mirror_skip_edge(y - radius + i32(k), i32(params.height));
    let a = images[params.src_word + row * w + id.x];
    let b = images[params.src2_word + row * w + id.x];
    let f = filters[params.filter_at + k];
    acc[0] = f32_add_serial(acc[0], f32_mul(f, a));
    acc[1] = f32_add_serial(acc[1], f32_mul(f, b));
    if (nq == 5u) {
      acc[2] = f32_add_serial(acc[2], f32_mul(f, f32_mul(a, a)));
      acc[3] = f32_add_serial(acc[3], f32_mul(f, f32_mul(b, b)));
      acc[4] = f32_add_serial(acc[4], f32_mul(f, f32_mul(a, b)));
    }
  }
  let plane = params.out_height * w;
  for (var q = 0u; q < nq; q = q + 1u) {
    vert[params.dst_word + q * plane + id.y * w + id.x] = acc[q];
  }
}

// The horizontal filter of quantity q's vertically filtered row y at column x.
fn horizontal(q: u32, y: u32, x: u32) -> u32 {
  let w = params.width;
  let radius = i32(params.taps / 2u);
  let base = q * params.out_height * w + y * w;
  var acc = 0u;
  for (var k = 0u; k < params.taps; k = k + 1u) {
    let col = mirror_skip_edge(i32(x) - radius + i32(k), i32(w));
    acc = f32_add_serial(acc, f32_mul(filters[params.filter_at + k], vert[base + col]));
  }
  return acc;
}

// The next scale's sample (x, y): the filtered planes at (2x, 2y).
@compute @workgroup_size(16, 16)
fn decimate(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  if (id.x >= params.out_width || id.y >= params.out_height) {
    return;
  }
  let i = id.y * params.out_width + id.x;
  images[params.dst_word + i] = horizontal(0u, id.y, 2u * id.x);
  images[params.dst2_word + i] = horizontal(1u, id.y, 2u * id.x);
}

// libvmaf's polynomial log2 (float_vif.cpp's fastLog2), in float.
fn fast_log2(x: u32) -> u32 {
  if ((x & 0x7fffffffu) == 0u) {
    return 0xff800000u; // -inf
  }
  if (f32_lt(x, 0u)) {
    return 0x7fc00000u; // NAN
  }
  let exponent = (x & 0x7f800000u) >> 23u;
  let t = f32_sub((x & 0x007fffffu) | 0x3f800000u, ONE);
  var v = 0u;
  for (var i = 0u; i < 9u; i = i + 1u) {
    v = f32_add(f32_mul(v, t), LOG2_POLY[i]);
  }
  let base = f32_from_i32(i32(exponent) - 127);
  return f32_add(base, v);
}

fn f64_of(x: u32) -> vec2<u32> {
  return f64_from_f32_bits(x);
}

@compute @workgroup_size(16, 16)
fn statistic(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let w = params.width;
  if (id.x >= w || id.y >= params.out_height) {
    return;
  }
  let m1 = horizontal(0u, id.y, id.x);
  let m2 = horizontal(1u, id.y, id.x);
  let xx = horizontal(2u, id.y, id.x);
  let yy = horizontal(3u, id.y, id.x);
  let xy = horizontal(4u, id.y, id.x);
  var s1 = f32_sub(xx, f32_mul(m1, m1));
  var s2 = f32_sub(yy, f32_mul(m2, m2));
  let s12 = f32_sub(xy, f32_mul(m1, m2));
  // std::max(v, 0.0f) is (v < 0) ? 0 : v
  if (f32_lt(s1, 0u)) {
    s1 = 0u;
  }
  if (f32_lt(s2, 0u)) {
    s2 = 0u;
  }
  var g = f32_div(s12, f32_add(s1, EPS));
  var sv = f32_sub(s2, f32_mul(g, s12));
  if (f32_lt(s1, EPS)) {
    g = 0u;
    sv = s2;
    s1 = 0u;
  }
  if (f32_lt(s2, EPS)) {
    g = 0u;
    sv = 0u;
  }
  if (f32_lt(g, 0u)) {
    sv = s2;
    g = 0u;
  }
  if (f32_lt(sv, EPS)) {
    sv = EPS;
  }
  // std::min(g, limit) is (limit < g) ? limit : g
  if (f32_lt(params.gain_limit, g)) {
    g = params.gain_limit;
  }
  let nsq = params.nsq;
  let gain = f64_div(f64_of(f32_mul(f32_mul(g, g), s1)), f64_add(f64_of(sv), nsq));
  var num = fast_log2(f32_from_f64(f64_add(F64_ONE, gain)));
  var den = fast_log2(f32_from_f64(f64_add(F64_ONE, f64_div(f64_of(s1), nsq))));
  if (f32_lt(s12, 0u)) {
    num = 0u;
  }
  if (f64_lt(f64_of(s1), nsq)) {
    num = f32_sub(ONE, f32_mul(s2, params.sigma_max_inv));
    den = ONE;
  }
  let plane = params.out_height * w;
  let i = id.y * w + id.x;
  terms[i] = num;
  terms[plane + i] = den;
}

var<workgroup> num_tile: array<u32, SR_ROWS * SR_TILE>;
var<workgroup> den_tile: array<u32, SR_ROWS * SR_TILE>;

// row_sums' loads of tile c0 for invocation lid: the numerator and denominator terms (0 outside).
fn term_words(group: u32, lid: u32, c0: u32, num: ptr<function, array<u32, SR_PER>>, den: ptr<function, array<u32, SR_PER>>) {
  let w = params.width;
  let h = params.out_height;
  for (var k = 0u; k < SR_PER; k = k + 1u) {
    let p = sr_place(lid, k);
    let y = group * SR_ROWS + p.x;
    let x = c0 + p.y;
    var vn = 0u;
    var vd = 0u;
    if (y < h && x < w) {
      vn = terms[y * w + x];
      vd = terms[h * w + y * w + x];
    }
    (*num)[k] = vn;
    (*den)[k] = vd;
  }
}

// Each row's terms summed in column order by one invocation, as the C++ sums a row.
@compute @workgroup_size(SR_THREADS)
fn row_sums(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let w = params.width;
  let y = group.x * SR_ROWS + lid;
  let sums = lid < SR_ROWS && y < params.out_height;
  var vn: array<u32, SR_PER>;
  var vd: array<u32, SR_PER>;
  term_words(group.x, lid, 0u, &vn, &vd);
  var num = 0u;
  var den = 0u;
  for (var c0 = 0u; c0 < w; c0 = c0 + SR_TILE) {
    workgroupBarrier(); // the previous tile's adds are done
    for (var k = 0u; k < SR_PER; k = k + 1u) {
      let p = sr_place(lid, k);
      num_tile[sr_word(p.x, p.y)] = vn[k];
      den_tile[sr_word(p.x, p.y)] = vd[k];
    }
    workgroupBarrier();
    if (c0 + SR_TILE < w) {
      term_words(group.x, lid, c0 + SR_TILE, &vn, &vd);
    }
    if (sums) {
      let n = min(SR_TILE, w - c0);
      for (var c = 0u; c < n; c = c + 1u) {
        num = f32_add_serial(num, num_tile[sr_word(lid, c)]);
        den = f32_add_serial(den, den_tile[sr_word(lid, c)]);
      }
    }
  }
  if (sums) {
    stats[params.dst_word + 2u * y] = num;
    stats[params.dst_word + 2u * y + 1u] = den;
  }
}
