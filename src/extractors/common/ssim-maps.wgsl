// #include "float-luma.wgsl"
// #include "../../kernels/gpu/lib/f32.wgsl"
// #include "../../kernels/gpu/lib/mirror.wgsl"
// #include "../../kernels/gpu/lib/fsum.wgsl"
//
// The float work of libvmaf's SSIM (common/ssim-core.cpp; float_ssim, float_ms_ssim) on the
// GPU, driven by ssim-maps-gpu.ts, bit for bit as the C++ does it: every float product is
// f32_mul and every double tap sum the C++'s sequential double sum in its tap order, each
// filtered sample rounded to float by f32_from_f64 (lib/f32.wgsl: integer arithmetic only, so
// no compiler contraction into FMAs and no flushed subnormals can change a bit). A tap sum is
// taken in fixed point where that is provably the same double (lib/fsum.wgsl: on natural
// content always), else by the f64_add chain. From the five filtered maps it forms the
// per-sample SSIM terms (float and double divisions, the sqrt) and libvmaf's four sequential
// double sums over them, exactly (the pooling section below); those sums, 32 bytes a scale,
// are what comes out (the C++ extractor's finishStats takes them).
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
  chunks: u32,     // terms, scan, *_maps, compose: the band's chunks of CHUNK samples
  sums_word: u32,  // scan, compose: the scale's four sums in `sums`
  first: u32,      // scan, compose: 1 for a scale's first band (the sums start at 0)
  level: u32,      // group_maps: the level it makes (1: groups of chunk maps)
  levels: u32,     // compose: the top level of group maps (0: chunk maps only)
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
// Per sum (COUNTER_WORDS apart), over the kernel's life: chunks passed through maps (of any
// level), chunks summed term by term, group maps applied (levels above the chunks'), group
// maps that did not apply (walked a level down), maps tried (the walk's steps)
// (SsimMapsKernel.diagnostics: tests and bench/ssim-pool-paths.mjs).
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

// decimate's tap (v, u) for output (x, y): the source sample under it (edges mirrored) times
// its weight.
fn decimate_tap(x: u32, y: u32, v: u32, u: u32) -> u32 {
  let f = i32(params.factor);
  let centre = i32(params.taps / 2u);
  let row = mirror_repeat_edge(i32(y) * f + i32(v) - centre, i32(params.height));
  let col = mirror_repeat_edge(i32(x) * f + i32(u) - centre, i32(params.width));
  return f32_mul(work[params.src_word + row * params.width + col], weights[v * params.taps + u]);
}

@compute @workgroup_size(16, 16)
fn decimate(@builtin(global_invocation_id) id: vec3<u32>) {
  f32_native_begin(params.width);
  if (id.x >= params.dst_width || id.y >= params.dst_height) {
    return;
  }
  let size = params.taps;
  var s = FSUM_START;
  for (var v = 0u; v < size; v = v + 1u) {
    for (var u = 0u; u < size; u = u + 1u) {
      s = fsum_add(s, decimate_tap(id.x, id.y, v, u));
    }
  }
  var out = fsum_to_f32(s);
  if (!s.ok) {
    // The fixed point could not hold a partial sum: the double chain itself (products again).
    var acc = F64_ZERO;
    for (var v = 0u; v < size; v = v + 1u) {
      for (var u = 0u; u < size; u = u + 1u) {
        acc = f64_add(acc, f64_from_f32_bits(decimate_tap(id.x, id.y, v, u)));
      }
    }
    out = f32_from_f64(acc);
  }
  work[params.dst_word + id.y * params.dst_width + id.x] = out;
}

// The double tap sum of 11 float terms, in order (fixed point where exact, else f64_add),
// rounded to float. two_pass: the least bit first, so the sum never shifts (else the unit
// lowers as the terms come).
fn window_sum(t: array<u32, 11>, two_pass: bool) -> u32 {
  var s = FSUM_START;
  if (two_pass) {
    var low = 1000;
    for (var k = 0u; k < WINDOW; k = k + 1u) {
      low = fsum_least(low, t[k]);
    }
    s = fsum_start_at(low);
  }
  for (var k = 0u; k < WINDOW; k = k + 1u) {
    s = fsum_add(s, t[k]);
  }
  if (s.ok) {
    return fsum_to_f32(s);
  }
  var acc = F64_ZERO;
  for (var k = 0u; k < WINDOW; k = k + 1u) {
    acc = f64_add(acc, f64_from_f32_bits(t[k]));
  }
  return f32_from_f64(acc);
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
  let base = (params.row0 + id.y) * w + id.x;
  var a: array<u32, 11>;
  var b: array<u32, 11>;
  for (var k = 0u; k < WINDOW; k = k + 1u) {
    a[k] = work[params.src_word + base + k];
    b[k] = work[params.src2_word + base + k];
  }
  for (var q = 0u; q < QUANTITIES; q = q + 1u) {
    var t: array<u32, 11>;
    for (var k = 0u; k < WINDOW; k = k + 1u) {
      t[k] = row_term(a[k], b[k], q, k);
    }
    // One pass (on lavapipe faster here than window_sum's two; filter_columns is the other
    // way round).
    rows[(q * h + id.y) * ow + id.x] = window_sum(t, false);
  }
}

// filter_rows' term k of quantity q (ref, dis, ref^2, dis^2, ref*dis) from samples a, b.
fn row_term(a: u32, b: u32, q: u32, k: u32) -> u32 {
  let x = select(a, b, q == 1u || q == 3u);
  let y = select(x, b, q == 4u);
  return f32_mul(select(f32_mul(x, y), x, q < 2u), GAUSSIAN[k]);
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
    var t: array<u32, 11>;
    for (var k = 0u; k < WINDOW; k = k + 1u) {
      t[k] = f32_mul(rows[(q * h + id.y + k) * ow + id.x], GAUSSIAN[k]);
    }
    maps[params.dst_word + (id.y * QUANTITIES + q) * ow + id.x] = window_sum(t, true);
  }
}

// ---- pooling ------------------------------------------------------------------------
// libvmaf sums four double terms per output sample (the SSIM term l*c*s, l, c, s) into
// double running sums, in row-major order: s <- RN(s + t), order-sensitive. The device
// reproduces those sums exactly, in parallel, from one observation: while a running sum
// stays in one binade, +-[2^E, 2^(E+1)), its representable values are the multiples of
// u = 2^(E-52), so each step adds t rounded to a multiple of u, and how it rounds depends on
// the sum only through the parity of |sum|/u (a tie rounds to the even multiple; rounding
// is symmetric, so a negative sum is its magnitude with the terms negated). So a chunk of
// CHUNK terms acts on any sum of that binade and sign that it keeps inside the binade as
// M = |s|/u -> M + d[parity of M]: two integers per chunk (chunk_map), computed for every
// chunk at once. Such maps compose: chunk 1 then chunk 2 (same binade and sign) is
// D[p] = d1[p] + d2[(p + d1[p]) & 1], valid where both are (bounds below), so groups of
// GROUP maps make a map of the next level (pool_group_maps), level on level. One thread per
// sum then walks the band (compose): at each point it tries the largest group that starts
// there; a map that applies (the sum is in the binade and sign it was made for and stays
// inside, checked from its excursion bounds) costs one 64-bit add; a group whose map does
// not apply (it holds a crossing of a power of two, or a guess was wrong) is walked one level
// down, and a chunk without a usable map (the sum crossing a power of two, near zero) is
// summed term by term, as libvmaf does (add_term: a one-term map where one applies, else
// f64_add). Either way the result is the sequential sum's exact bits. Which binade a map is
// made for comes from native f32 approximations (scan): a wrong guess only sends that chunk
// down the term-by-term path (and its groups a level down).

const CHUNK: u32 = 32u;
// pool_terms' workgroup: TERMS_CHUNKS chunks.
const TERMS_GROUP: u32 = 256u;
const TERMS_CHUNKS: u32 = TERMS_GROUP / CHUNK;
// Maps per group of the next level (2^GROUP_BITS), and the most levels (the chunks' first).
const GROUP_BITS: u32 = 3u;
const GROUP: u32 = 1u << GROUP_BITS;
const MAX_LEVELS: u32 = 8u;
const SUMS: u32 = 4u;
const COUNTER_WORDS: u32 = 8u;
// Words per map: d0, d1, lo, hi (i64 each), E, the sign it is for (0: unusable, 1: a
// positive sum, 2: a negative one).
const MAP_WORDS: u32 = 10u;
// A usable map's hi - lo is at most 2^52 - 3 (no sum of the binade could stay inside with a
// wider excursion), so its words stay below 2^52 in magnitude and compositions never overflow.
const SPAN_LIMIT: vec2<u32> = vec2<u32>(0xfffffffdu, 0xfffffu);
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
// `terms` (sum q's at q * count + i), and their chunks' approximate totals (chunk_totals).
@compute @workgroup_size(256)
fn pool_terms(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  f32_native_begin(params.width);
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
  chunk_totals(lid.x, wid.x, i < n, t);
}

// For tests (SsimMapsKernel.encodePoolingOfTerms): pool_terms' guesses of terms put in
// `terms` from outside.
@compute @workgroup_size(256)
fn pool_approx(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let i = gid.x;
  let n = params.count;
  var t: array<vec2<u32>, 4>;
  if (i < n) {
    for (var q = 0u; q < SUMS; q = q + 1u) {
      t[q] = terms[q * n + i];
    }
  }
  chunk_totals(lid.x, wid.x, i < n, t);
}

// Approximate f32 totals of a workgroup's TERMS_CHUNKS chunks into `approx`, for scan
// (lane `lane` holds terms t, if `valid`).
fn chunk_totals(lane: u32, group: u32, valid: bool, t: array<vec2<u32>, 4>) {
  for (var q = 0u; q < SUMS; q = q + 1u) {
    partial[q][lane] = select(0.0, bitcast<f32>(f32_from_f64(t[q])), valid);
  }
  workgroupBarrier();
  // Each chunk's total, within its CHUNK lanes (a fixed order: the same guesses every run).
  for (var half = CHUNK / 2u; half > 0u; half = half / 2u) {
    if ((lane & (CHUNK - 1u)) < half) {
      for (var q = 0u; q < SUMS; q = q + 1u) {
        partial[q][lane] = partial[q][lane] + partial[q][lane + half];
      }
    }
    workgroupBarrier();
  }
  // Each chunk's total before it in the workgroup, and the workgroup's total (block_guess).
  if (lane < SUMS) {
    let q = lane;
    var run = 0.0;
    for (var k = 0u; k < TERMS_CHUNKS; k = k + 1u) {
      let c = group * TERMS_CHUNKS + k;
      if (c < params.chunks) {
        approx[q * params.chunks + c] = run;
      }
      run = run + partial[q][k * CHUNK];
    }
    approx[block_guess(q, group)] = run;
  }
}

// Where pool_terms leaves block b's (TERMS_GROUP terms') total, which scan turns into the
// approximate sum before the block; `approx` starts with each chunk's total before it in
// its block.
fn block_guess(q: u32, b: u32) -> u32 {
  let blocks = (params.chunks + TERMS_CHUNKS - 1u) / TERMS_CHUNKS;
  return SUMS * params.chunks + q * blocks + b;
}

var<workgroup> segment: array<f32, 256>;

// One workgroup per sum: the blocks' totals in `approx` become each block's approximate
// running sum before it (exclusive prefix, from the sum so far), in native f32: with a
// chunk's total before it in its block, only a guess of the binade.
@compute @workgroup_size(256)
fn pool_scan(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let q = wid.x;
  let c = (params.chunks + TERMS_CHUNKS - 1u) / TERMS_CHUNKS;
  let per = (c + 255u) / 256u;
  let begin = min(c, lid.x * per);
  let end = min(c, begin + per);
  let at = block_guess(q, 0u);
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

// Maps of level l (0: the chunks'; l: groups of GROUP maps of level l - 1) and where that
// level's maps start in chunk_maps (levels one after another, each sum's maps together).
fn level_count(l: u32) -> u32 {
  let shift = GROUP_BITS * l;
  return (params.chunks + (1u << shift) - 1u) >> shift;
}

fn level_base(l: u32) -> u32 {
  var base = 0u;
  for (var k = 0u; k < l; k = k + 1u) {
    base = base + SUMS * MAP_WORDS * level_count(k);
  }
  return base;
}

// One thread per (chunk, sum): the chunk's map for the binade and sign of its approximate
// starting sum, E: for a sum of magnitude M u (2^52 <= M < 2^53, u = 2^(E-52)) with M of
// parity p, the chunk leaves M + d[p] if every step stays in the binade, which holds when
// M + lo - 1 >= 2^52 and M + hi + 1 < 2^53 (lo, hi: the extremes of both parities' running
// offsets, 0 included; each unrounded step lies within half a unit of its rounded offset).
// Terms of magnitude 2^E or more, non-finite ones or a sum guessed of magnitude below 2^-20
// leave the map unusable.
@compute @workgroup_size(64)
fn pool_chunk_maps(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let c = gid.x;
  let q = gid.y;
  var w: array<u32, MAP_WORDS>; // all 0: unusable past the band's chunks
  if (c < params.chunks) {
    w = chunk_map(c, q);
    let out = (q * params.chunks + c) * MAP_WORDS;
    for (var k = 0u; k < MAP_WORDS; k = k + 1u) {
      chunk_maps[out + k] = w[k];
    }
  }
  // The workgroup's 64 = GROUP * GROUP chunk maps make its maps of levels 1 and 2 too
  // (pool_group_maps makes the levels above).
  built[lid.x] = w;
  workgroupBarrier();
  if (lid.x < GROUP) {
    let g = wid.x * GROUP + lid.x;
    // The band's last group may have fewer maps.
    let count = min(GROUP, params.chunks - min(params.chunks, g * GROUP));
    var m = built[lid.x * GROUP];
    for (var k = 1u; k < count; k = k + 1u) {
      m = compose_maps(m, built[lid.x * GROUP + k]);
    }
    if (g < level_count(1u)) {
      store_map(1u, g, q, m);
    }
    partial_maps[lid.x] = m;
  }
  workgroupBarrier();
  if (lid.x == 0u && wid.x < level_count(2u)) {
    let count = min(GROUP, level_count(1u) - wid.x * GROUP);
    var m = partial_maps[0];
    for (var k = 1u; k < count; k = k + 1u) {
      m = compose_maps(m, partial_maps[k]);
    }
    store_map(2u, wid.x, q, m);
  }
}

var<workgroup> built: array<array<u32, MAP_WORDS>, 64>;
var<workgroup> partial_maps: array<array<u32, MAP_WORDS>, 8>;

// Map m of level l (sum q) into chunk_maps, where that level exists in this band.
fn store_map(l: u32, g: u32, q: u32, m: array<u32, MAP_WORDS>) {
  if (l > params.levels) {
    return;
  }
  let out = level_base(l) + (q * level_count(l) + g) * MAP_WORDS;
  for (var k = 0u; k < MAP_WORDS; k = k + 1u) {
    chunk_maps[out + k] = m[k];
  }
}

// Chunk c's map for sum q, as pool_chunk_maps' comment says.
fn chunk_map(c: u32, q: u32) -> array<u32, MAP_WORDS> {
  let guess = approx[block_guess(q, c / TERMS_CHUNKS)] + approx[q * params.chunks + c];
  let gbits = bitcast<u32>(guess);
  let gexp = (gbits >> 23u) & 0xffu;
  let sign = gbits >> 31u;
  // Finite, of magnitude at least 2^-20.
  var ok = gexp != 0xffu && gexp >= 107u;
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
    // Against the sum's sign, the term shrinks the magnitude.
    let negative = (t.y >> 31u) != sign;
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
  ok = ok && i64_le(i64_sub(hi, lo), SPAN_LIMIT);
  return array<u32, MAP_WORDS>(d0.x, d0.y, d1.x, d1.y, lo.x, lo.y, hi.x, hi.y, bitcast<u32>(e), select(0u, sign + 1u, ok));
}

// Map a then map b, usable where both are, for the same binade and sign (0 words where
// not). Parity p's sum leaves a at M + D[p] and enters b with parity (p + D[p]) & 1; its
// offsets there are D[p] plus b's, so lo and hi take D[0] + lo_b, D[1] + lo_b (and hi_b)
// in: the composed map applies only where both parts would, so it gives their result.
fn compose_maps(a: array<u32, MAP_WORDS>, b: array<u32, MAP_WORDS>) -> array<u32, MAP_WORDS> {
  let d0 = vec2<u32>(a[0], a[1]);
  let d1 = vec2<u32>(a[2], a[3]);
  let b0 = vec2<u32>(b[0], b[1]);
  let b1 = vec2<u32>(b[2], b[3]);
  let blo = vec2<u32>(b[4], b[5]);
  let bhi = vec2<u32>(b[6], b[7]);
  // Parity 0's sum enters b with d0's parity, parity 1's with 1 + d1's.
  let n0 = i64_add(d0, select(b0, b1, (d0.x & 1u) != 0u));
  let n1 = i64_add(d1, select(b0, b1, ((1u + d1.x) & 1u) != 0u));
  let lo = i64_min(vec2<u32>(a[4], a[5]), i64_min(i64_add(d0, blo), i64_add(d1, blo)));
  let hi = i64_max(vec2<u32>(a[6], a[7]), i64_max(i64_add(d0, bhi), i64_add(d1, bhi)));
  // Usable parts have words under 2^52 in magnitude: these sums cannot overflow.
  let ok = a[9] != 0u && b[9] == a[9] && b[8] == a[8] && i64_le(i64_sub(hi, lo), SPAN_LIMIT);
  if (!ok) {
    return array<u32, MAP_WORDS>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
  }
  return array<u32, MAP_WORDS>(n0.x, n0.y, n1.x, n1.y, lo.x, lo.y, hi.x, hi.y, a[8], a[9]);
}

// One thread per (group, sum) of level params.level (3 and up: chunk_maps makes 1 and 2):
// the map of GROUP consecutive maps of the level below (compose_maps).
@compute @workgroup_size(64)
fn pool_group_maps(@builtin(global_invocation_id) gid: vec3<u32>) {
  let g = gid.x;
  let q = gid.y;
  let level = params.level;
  if (g >= level_count(level)) {
    return;
  }
  let below = level_count(level - 1u);
  let src = level_base(level - 1u) + q * below * MAP_WORDS;
  let first = g * GROUP;
  var m = load_map(src + first * MAP_WORDS);
  for (var k = first + 1u; m[9] != 0u && k < min(below, first + GROUP); k = k + 1u) {
    m = compose_maps(m, load_map(src + k * MAP_WORDS));
  }
  store_map(level, g, q, m);
}

// A map's ten words (all loads issued together).
fn load_map(at: u32) -> array<u32, MAP_WORDS> {
  var w: array<u32, MAP_WORDS>;
  for (var k = 0u; k < MAP_WORDS; k = k + 1u) {
    w[k] = chunk_maps[at + k];
  }
  return w;
}

// Map w applied to s where it applies (a normal sum of its sign and binade that it keeps
// inside: M + lo >= 2^52 + 1, M + hi <= 2^53 - 2); .z = 1 where it did.
fn apply_map(s: vec2<u32>, w: array<u32, MAP_WORDS>) -> vec3<u32> {
  let biased = (s.y >> 20u) & 0x7ffu;
  if (w[9] != (s.y >> 31u) + 1u || biased == 0u || biased == 0x7ffu || i32(biased) - 1023 != bitcast<i32>(w[8])) {
    return vec3<u32>(s, 0u);
  }
  let m = vec2<u32>(s.x, (s.y & 0xfffffu) | 0x100000u);
  let lo = vec2<u32>(w[4], w[5]);
  let hi = vec2<u32>(w[6], w[7]);
  if (i64_lt(i64_add(m, lo), vec2<u32>(1u, 0x100000u)) || i64_gt(i64_add(m, hi), vec2<u32>(0xfffffffeu, 0x1fffffu))) {
    return vec3<u32>(s, 0u);
  }
  let d = select(vec2<u32>(w[0], w[1]), vec2<u32>(w[2], w[3]), (s.x & 1u) != 0u);
  return vec3<u32>(i64_add(s, d), 1u);
}

// s + t, rounded to nearest even as f64_add does it, by a one-term map where that applies
// (s normal, |t| < 2^E for s's binade E, and the sum's rounded magnitude M' = M +- t/u
// within [2^52 + 1, 2^53 - 2], so the exact sum is inside the binade, whose rounding is to
// multiples of u): a shift and a 64-bit add instead of f64_add's general path.
fn add_term(s: vec2<u32>, t: vec2<u32>) -> vec2<u32> {
  let sb = (s.y >> 20u) & 0x7ffu;
  let tmag = t.y & 0x7fffffffu;
  let tb = tmag >> 20u;
  if (sb != 0u && sb != 0x7ffu && tb < sb) {
    var mant = vec2<u32>(t.x, tmag & 0xfffffu);
    var eff = tb;
    if (tb == 0u) {
      eff = 1u;
    } else {
      mant.y = mant.y | 0x100000u;
    }
    // t = mant 2^(eff - 1075), u = 2^(sb - 1075): t/u = mant / 2^sh.
    let sh = sb - eff;
    if (sh >= 1u) {
      var a = vec2<u32>(0u, 0u);
      var cmp = -1;
      if (sh <= 53u) {
        a = u64_shr(mant, sh);
        let rem = i64_sub(mant, i64_shl(a, sh));
        let half = i64_bit(sh - 1u);
        cmp = select(select(0, 1, u64_gt(rem, half)), -1, u64_lt(rem, half));
      }
      // Up on a tie when M +- a is odd (M +- a +- 1 is the even one).
      if (cmp > 0 || (cmp == 0 && ((s.x + a.x) & 1u) != 0u)) {
        a = i64_add_u32(a, 1u);
      }
      let m = vec2<u32>(s.x, (s.y & 0xfffffu) | 0x100000u);
      let negative = (t.y >> 31u) != (s.y >> 31u);
      let m2 = select(i64_add(m, a), i64_sub(m, a), negative);
      if (i64_ge(m2, vec2<u32>(1u, 0x100000u)) && i64_le(m2, vec2<u32>(0xfffffffeu, 0x1fffffu))) {
        return select(i64_add(s, a), i64_sub(s, a), negative);
      }
    }
  }
  return f64_add(s, t);
}

// One thread per sum (one workgroup each: the sums' walks do not wait on one another): the
// band's chunks in order, from the scale's sum so far (in `sums`, 0 for its first band),
// through the largest applicable map at each point, term by term where none applies.
@compute @workgroup_size(1)
fn pool_compose(@builtin(workgroup_id) wid: vec3<u32>) {
  let q = wid.x;
  let n = params.count;
  let chunks = params.chunks;
  let top = params.levels;
  var s = F64_ZERO;
  if (params.first == 0u) {
    s = sums[params.sums_word + q];
  }
  // Each level's first map of sum q.
  var start: array<u32, MAX_LEVELS>;
  var base = 0u;
  for (var l = 0u; l <= top; l = l + 1u) {
    let count = level_count(l);
    start[l] = base + q * count * MAP_WORDS;
    base = base + SUMS * MAP_WORDS * count;
  }
  var mapped_chunks = 0u;
  var groups_mapped = 0u;
  var groups_walked = 0u;
  var tries = 0u;
  // At chunk c the largest group starting there (level l); where its map does not apply, the
  // first group a level down; where a chunk's does not, its terms. The maps a step can lead
  // to (the next group if this one applies or its chunk is summed term by term, the first
  // one a level down if not) are loaded while this step is worked out, so a step does not
  // wait on memory.
  var c = 0u;
  var l = top;
  var words = load_map(start[l]);
  while (c < chunks) {
    let span = min(chunks - c, 1u << (GROUP_BITS * l));
    let after = c + span;
    let after_level = min(top, countTrailingZeros(after) / GROUP_BITS);
    // Past the end (the walk stops) or at level 0 (no level down): any valid map, unused.
    let after_at = select(start[0] + (chunks - 1u) * MAP_WORDS, start[after_level] + (after >> (GROUP_BITS * after_level)) * MAP_WORDS, after < chunks);
    let down = select(0u, l - 1u, l > 0u);
    let next_words = load_map(after_at);
    let down_words = load_map(start[down] + (c >> (GROUP_BITS * down)) * MAP_WORDS);
    let next = apply_map(s, words);
    tries = tries + 1u;
    if (next.z != 0u) {
      s = next.xy;
      mapped_chunks = mapped_chunks + span;
      if (l > 0u) {
        groups_mapped = groups_mapped + 1u;
      }
    } else if (l > 0u) {
      groups_walked = groups_walked + 1u;
      l = down;
      words = down_words;
      continue;
    } else {
      // Term by term: the chunk's terms loaded first (the loads do not wait on the adds),
      // most of them added by add_term's one-term map.
      let i0 = c * CHUNK;
      let m = min(n - i0, CHUNK);
      var buf: array<vec2<u32>, CHUNK>;
      for (var k = 0u; k < m; k = k + 1u) {
        buf[k] = terms[q * n + i0 + k];
      }
      for (var k = 0u; k < m; k = k + 1u) {
        s = add_term(s, buf[k]);
      }
    }
    c = after;
    l = after_level;
    words = next_words;
  }
  sums[params.sums_word + q] = s;
  let at = COUNTER_WORDS * q;
  counters[at] = counters[at] + mapped_chunks;
  counters[at + 1u] = counters[at + 1u] + chunks - mapped_chunks;
  counters[at + 2u] = counters[at + 2u] + groups_mapped;
  counters[at + 3u] = counters[at + 3u] + groups_walked;
  counters[at + 4u] = counters[at + 4u] + tries;
}
