// #include "float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
//
// The float work of libvmaf's SSIM (common/ssim-core.cpp; float_ssim, float_ms_ssim) on the
// GPU, driven by ssim-maps-gpu.ts, bit for bit as the C++ does it: every float product is
// f32_mul and every double tap sum f64_add, in the C++'s tap order, each filtered sample
// rounded to float by f32_from_f64 (lib/f32.wgsl: integer arithmetic only, so no compiler
// contraction into FMAs and no flushed subnormals can change a bit). From the five filtered
// maps it forms the per-sample SSIM terms (float and double divisions, the sqrt) and
// libvmaf's four sequential double sums over them, exactly (the pooling section below);
// those sums, 32 bytes a scale, are what comes out (the C++ extractor's finishStats takes them).
//
// Images are floats (bit patterns) in `work`, rows packed, placed by Params.
//   to_float:        a picture's luma -> float image (libvmaf's picture_copy scaling)
//   decimate:        float image -> every factor-th sample through a taps x taps kernel
//   filter_rows:     ref and dis images -> horizontal 11-tap Gaussian of ref, dis, ref^2,
//                    dis^2, ref*dis, where the window fits (ow = w - 10 per row), for one
//                    band of source rows, into `rows`
//   filter_columns:  those rows -> the vertical 11-tap Gaussian of the band's output rows,
//                    into `maps` (the band's)
//   pool_*:          the band's terms and their running sums (below), carried from band
//                    to band in `sums` (the instance's output)
// Bands keep the row scratch, maps and terms under the storage binding limit, so a picture
// of any height is pooled (2160p's terms would be 262 MB for one scale).

override BIT_DEPTH: u32 = 8u;
const WINDOW: u32 = 11u;
const QUANTITIES: u32 = 5u;

// The Gaussian's float constants, as bit patterns (0.001028f, 0.007599f, ... symmetric).
const GAUSSIAN = array<u32, 11>(
  0x3a86bdf5u, 0x3bf90108u, 0x3d1375c9u, 0x3ddff8a9u, 0x3e5a1e3fu, 0x3e8832bau, 0x3e5a1e3fu, 0x3ddff8a9u, 0x3d1375c9u, 0x3bf90108u, 0x3a86bdf5u);

struct Params {
  src_word: u32,   // first word of the source (picture plane, or image in work)
  src2_word: u32,  // filter_rows: the dis image
  width: u32,      // the source's size
  height: u32,
  dst_word: u32,   // first word of the destination (in work, or in maps)
  dst_width: u32,
  dst_height: u32,
  factor: u32,     // decimate
  taps: u32,       // decimate: the kernel's side
  scale_bits: u32, // to_float: 1 / 2^(bitDepth - 8) as a float
  row0: u32,       // filter_rows: the band's first source row
  count: u32,      // terms, chunk_*: the band's output samples
  chunks: u32,     // scan, chunk_maps, compose: the band's chunks of CHUNK samples
  sums_word: u32,  // scan, compose: the scale's four sums in `sums`
  first: u32,      // scan, compose: 1 for a scale's first band (the sums start at 0)
}

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read_write> work: array<u32>;
@group(0) @binding(2) var<storage, read_write> maps: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read> weights: array<u32>;
@group(0) @binding(5) var<storage, read_write> rows: array<u32>;
@group(0) @binding(6) var<storage, read_write> terms: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read_write> approx: array<f32>;
@group(0) @binding(8) var<storage, read_write> chunk_maps: array<u32>;
@group(0) @binding(9) var<storage, read_write> sums: array<vec2<u32>>;
// Per sum, how many chunks were mapped and how many summed term by term, over the kernel's
// life (SsimMapsKernel.diagnostics: tests and bench/ssim-pool-paths.mjs read it).
@group(0) @binding(10) var<storage, read_write> counters: array<u32>;

@compute @workgroup_size(16, 16)
fn to_float(@builtin(global_invocation_id) id: vec3<u32>) {
  let w = params.width;
  if (id.x >= w || id.y >= params.height) {
    return;
  }
  let i = id.y * w + id.x;
  work[params.dst_word + i] = luma_scaled(i);
}

@compute @workgroup_size(16, 16)
fn decimate(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  if (id.x >= params.dst_width || id.y >= params.dst_height) {
    return;
  }
  let w = i32(params.width);
  let h = i32(params.height);
  let size = params.taps;
  let centre = i32(size / 2u);
  let f = i32(params.factor);
  var acc = F64_ZERO;
  for (var v = 0u; v < size; v = v + 1u) {
    let row = mirror_repeat_edge(i32(id.y) * f + i32(v) - centre, h);
    let base = params.src_word + row * u32(w);
    for (var u = 0u; u < size; u = u + 1u) {
      let col = mirror_repeat_edge(i32(id.x) * f + i32(u) - centre, w);
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
  f32_native_begin(params.width);
  let w = params.width;
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

// One output sample of the band (height filtered rows in `rows`, dst_height = those
// less 10 output rows): the vertical sums of the five row-filtered quantities, written as
// the row's block of five ow-float maps at dst_word of `maps`.
@compute @workgroup_size(16, 16)
fn filter_columns(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  let ow = params.width - WINDOW + 1u;
  let h = params.height;
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

// ---- pooling ------------------------------------------------------------------------
// libvmaf sums four double terms per output sample (the SSIM term l*c*s, l, c, s) into
// double running sums, in row-major order: s <- RN(s + t), order-sensitive. The device
// reproduces those sums exactly, in parallel, from one observation: while a running sum
// stays in one binade [2^E, 2^(E+1)) its representable values are the multiples of
// u = 2^(E-52), so each step adds t rounded to a multiple of u, and how it rounds depends on
// the sum only through the parity of sum/u (a tie rounds to the even multiple). So a chunk
// of CHUNK terms acts on any sum of that binade that it keeps inside the binade as
// s/u -> s/u + d[parity of s/u]: two integers per chunk (chunk_map), computed for every
// chunk at once. One thread per sum then walks the chunks in order (compose): a chunk whose
// map applies (the sum is in the binade the map was made for and stays inside it, checked
// from the chunk's exact excursion bounds) costs one 64-bit add; any other chunk (the sum
// crossing a power of two, near zero, negative) is summed term by term with f64_add, as
// libvmaf does. Either way the result is the sequential sum's exact bits. Which binade a
// map is made for comes from native f32 approximations (scan): a wrong guess only sends
// that chunk down the term-by-term path.

const CHUNK: u32 = 256u;
const SUMS: u32 = 4u;
// Words per chunk map: d0, d1, lo, hi (i64 each), E, whether the map is usable.
const MAP_WORDS: u32 = 10u;
// SSIM's constants as libvmaf's floats: (0.01f*255)^2, (0.03f*255)^2 and half the latter.
const C1: u32 = 0x40d0147au;
const C2: u32 = 0x426a1709u;
const C3: u32 = 0x41ea1709u;
const F64_TWO: vec2<u32> = vec2<u32>(0u, 0x40000000u);

fn f32_le(a: u32, b: u32) -> bool {
  return f64_le(f64_from_f32_bits(a), f64_from_f32_bits(b));
}

var<workgroup> partial: array<array<f32, 256>, 4>;

// One output sample of the band (its maps in `maps`, rows of five ow-float blocks): the four
// terms, as ssim-core.cpp's SsimPool::row forms them (float and double steps alike), into
// `terms` (sum q's at q * count + i); each workgroup (one chunk) also leaves approximate
// f32 totals of its chunk in `approx` for scan.
@compute @workgroup_size(256)
fn pool_terms(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let i = gid.x;
  let n = params.count;
  var t: array<vec2<u32>, 4>;
  if (i < n) {
    let ow = params.width - WINDOW + 1u;
    let y = i / ow;
    let x = i - y * ow;
    let base = y * QUANTITIES * ow + x;
    let mu1 = maps[base];
    let mu2 = maps[base + ow];
    let aa = maps[base + 2u * ow];
    let bb = maps[base + 3u * ow];
    let ab = maps[base + 4u * ow];
    let mu11 = f32_mul(mu1, mu1);
    let mu22 = f32_mul(mu2, mu2);
    var var1 = f32_sub(aa, mu11);
    var var2 = f32_sub(bb, mu22);
    if (f32_lt(var1, 0u)) {
      var1 = 0u;
    }
    if (f32_lt(var2, 0u)) {
      var2 = 0u;
    }
    let cov = f32_sub(ab, f32_mul(mu1, mu2));
    let sigmas = f32_sqrt(f32_mul(var1, var2));
    let lum = f64_div(f64_add(f64_mul(f64_mul(F64_TWO, f64_from_f32_bits(mu1)), f64_from_f32_bits(mu2)), f64_from_f32_bits(C1)),
                      f64_from_f32_bits(f32_add(f32_add(mu11, mu22), C1)));
    let con = f64_div(f64_add(f64_mul(F64_TWO, f64_from_f32_bits(sigmas)), f64_from_f32_bits(C2)),
                      f64_from_f32_bits(f32_add(f32_add(var1, var2), C2)));
    var clamped = cov;
    if (f32_lt(cov, 0u) && f32_le(sigmas, 0u)) {
      clamped = 0u;
    }
    let st = f64_from_f32_bits(f32_div(f32_add(clamped, C3), f32_add(sigmas, C3)));
    t[0] = f64_mul(f64_mul(lum, con), st);
    t[1] = lum;
    t[2] = con;
    t[3] = st;
    for (var q = 0u; q < SUMS; q = q + 1u) {
      terms[q * n + i] = t[q];
    }
  }
  for (var q = 0u; q < SUMS; q = q + 1u) {
    partial[q][lid.x] = select(0.0, bitcast<f32>(f32_from_f64(t[q])), i < n);
  }
  workgroupBarrier();
  for (var half = CHUNK / 2u; half > 0u; half = half / 2u) {
    if (lid.x < half) {
      for (var q = 0u; q < SUMS; q = q + 1u) {
        partial[q][lid.x] = partial[q][lid.x] + partial[q][lid.x + half];
      }
    }
    workgroupBarrier();
  }
  if (lid.x < SUMS) {
    approx[lid.x * params.chunks + wid.x] = partial[lid.x][0];
  }
}

var<workgroup> segment: array<f32, 256>;

// One workgroup per sum: `approx` becomes each chunk's approximate running sum before it
// (exclusive prefix, from the sum so far), in native f32: only a guess of the binade.
@compute @workgroup_size(256)
fn pool_scan(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let q = wid.x;
  let c = params.chunks;
  let per = (c + 255u) / 256u;
  let begin = min(c, lid.x * per);
  let end = min(c, begin + per);
  let at = q * c;
  var total = 0.0;
  for (var k = begin; k < end; k = k + 1u) {
    total = total + approx[at + k];
  }
  segment[lid.x] = total;
  workgroupBarrier();
  if (lid.x == 0u) {
    var run = 0.0;
    if (params.first == 0u) {
      run = bitcast<f32>(f32_from_f64(sums[params.sums_word + q]));
    }
    for (var k = 0u; k < 256u; k = k + 1u) {
      let v = segment[k];
      segment[k] = run;
      run = run + v;
    }
  }
  workgroupBarrier();
  var run = segment[lid.x];
  for (var k = begin; k < end; k = k + 1u) {
    let v = approx[at + k];
    approx[at + k] = run;
    run = run + v;
  }
}

// One thread per (chunk, sum): the chunk's map for the binade of its approximate starting
// sum, E: for a sum s = M u (2^52 <= M < 2^53, u = 2^(E-52)) of parity p, the chunk leaves
// M + d[p] if every step stays in the binade, which holds when M + lo - 1 >= 2^52 and
// M + hi + 1 < 2^53 (lo, hi: the extremes of both parities' running offsets; each
// unrounded step lies within half a unit of its rounded offset). Terms at or above 2^E,
// non-finite ones or a sum guessed below 2^-20 or negative leave the map unusable.
@compute @workgroup_size(64)
fn pool_chunk_maps(@builtin(global_invocation_id) gid: vec3<u32>) {
  let c = gid.x;
  let q = gid.y;
  if (c >= params.chunks) {
    return;
  }
  let out = (q * params.chunks + c) * MAP_WORDS;
  let guess = approx[q * params.chunks + c];
  let gbits = bitcast<u32>(guess);
  let gexp = (gbits >> 23u) & 0xffu;
  // Positive, finite, at least 2^-20.
  var ok = (gbits >> 31u) == 0u && gexp != 0xffu && gexp >= 107u;
  let e = i32(gexp) - 127;
  let n = params.count;
  let begin = c * CHUNK;
  let end = min(n, begin + CHUNK);
  var d0 = vec2<u32>(0u, 0u);
  var d1 = vec2<u32>(0u, 0u);
  var lo = vec2<u32>(0u, 0u);
  var hi = vec2<u32>(0u, 0u);
  for (var i = begin; ok && i < end; i = i + 1u) {
    let t = terms[q * n + i];
    let tbits = t.y & 0x7fffffffu;
    if (tbits == 0u && t.x == 0u) {
      continue;
    }
    let biased = i32(tbits >> 20u);
    if (biased == 0x7ff || biased - 1023 >= e) {
      ok = false;
      break;
    }
    var mant = vec2<u32>(t.x, tbits & 0xfffffu);
    var eff = biased;
    if (biased == 0) {
      eff = 1;
    } else {
      mant.y = mant.y | 0x100000u;
    }
    // t = mant 2^(eff - 1075); in units of u = 2^(e - 52) its integer part is mant >> sh.
    let sh = u32(e + 1023 - eff);
    var a = vec2<u32>(0u, 0u);
    var cmp = -1; // the remainder against half a unit
    if (sh <= 53u) {
      a = u64_shr(mant, sh);
      let rem = i64_sub(mant, i64_shl(a, sh));
      let half = i64_bit(sh - 1u);
      cmp = select(select(0, 1, u64_gt(rem, half)), -1, u64_lt(rem, half));
    }
    let negative = (t.y >> 31u) != 0u;
    // Parity p's sum before this step is M + d_p with M = p (mod 2); a tie goes to the even
    // one of M + d_p +- a and that plus or minus 1.
    var m0 = a;
    var m1 = a;
    if (cmp > 0) {
      m0 = i64_add_u32(a, 1u);
      m1 = m0;
    } else if (cmp == 0) {
      let odd0 = ((d0.x + a.x) & 1u) != 0u;
      let odd1 = ((1u + d1.x + a.x) & 1u) != 0u;
      m0 = select(a, i64_add_u32(a, 1u), odd0);
      m1 = select(a, i64_add_u32(a, 1u), odd1);
    }
    if (negative) {
      d0 = i64_sub(d0, m0);
      d1 = i64_sub(d1, m1);
    } else {
      d0 = i64_add(d0, m0);
      d1 = i64_add(d1, m1);
    }
    lo = i64_min(lo, i64_min(d0, d1));
    hi = i64_max(hi, i64_max(d0, d1));
  }
  chunk_maps[out] = d0.x;
  chunk_maps[out + 1u] = d0.y;
  chunk_maps[out + 2u] = d1.x;
  chunk_maps[out + 3u] = d1.y;
  chunk_maps[out + 4u] = lo.x;
  chunk_maps[out + 5u] = lo.y;
  chunk_maps[out + 6u] = hi.x;
  chunk_maps[out + 7u] = hi.y;
  chunk_maps[out + 8u] = bitcast<u32>(e);
  chunk_maps[out + 9u] = select(0u, 1u, ok);
}

// One thread per sum: the band's chunks in order, from the scale's sum so far (in `sums`,
// 0 for its first band), mapped where the map applies, term by term otherwise.
@compute @workgroup_size(4)
fn pool_compose(@builtin(local_invocation_id) lid: vec3<u32>) {
  let q = lid.x;
  let n = params.count;
  var s = F64_ZERO;
  if (params.first == 0u) {
    s = sums[params.sums_word + q];
  }
  var mapped_chunks = 0u;
  let low = vec2<u32>(1u, 0x100000u);       // 2^52 + 1
  let high = vec2<u32>(0xfffffffeu, 0x1fffffu); // 2^53 - 2
  for (var c = 0u; c < params.chunks; c = c + 1u) {
    let at = (q * params.chunks + c) * MAP_WORDS;
    var mapped = false;
    let biased = s.y >> 20u; // 0 for zero, subnormals and every negative sum's sign bit set
    if (chunk_maps[at + 9u] != 0u && biased != 0u && biased < 0x7ffu && i32(biased) - 1023 == bitcast<i32>(chunk_maps[at + 8u])) {
      let m = vec2<u32>(s.x, (s.y & 0xfffffu) | 0x100000u);
      let lo = vec2<u32>(chunk_maps[at + 4u], chunk_maps[at + 5u]);
      let hi = vec2<u32>(chunk_maps[at + 6u], chunk_maps[at + 7u]);
      if (i64_ge(i64_add(m, lo), low) && i64_le(i64_add(m, hi), high)) {
        let p = (s.x & 1u) * 2u;
        let d = vec2<u32>(chunk_maps[at + p], chunk_maps[at + p + 1u]);
        s = i64_add(s, d);
        mapped = true;
      }
    }
    if (mapped) {
      mapped_chunks = mapped_chunks + 1u;
    } else {
      let end = min(n, (c + 1u) * CHUNK);
      for (var i = c * CHUNK; i < end; i = i + 1u) {
        s = f64_add(s, terms[q * n + i]);
      }
    }
  }
  sums[params.sums_word + q] = s;
  counters[2u * q] = counters[2u * q] + mapped_chunks;
  counters[2u * q + 1u] = counters[2u * q + 1u] + params.chunks - mapped_chunks;
}
