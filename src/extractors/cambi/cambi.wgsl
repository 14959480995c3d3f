// CAMBI's per-pixel work (driven by cambi-gpu.ts), the very integer steps of cambi.cpp, each
// pixel a pure function of the previous pass's buffer, so every pass is exact and its result
// independent of scheduling:
//   prepare  counts the frame's samples above the bit depth's range (cambi.cpp checks them
//            all; the dispatch covers the frame and the picture), and makes the luma at the encode size (each sample picked from the frame's
//            column and row cambi.cpp's nearestPicks gives) and 10 bits, anti-dithered when
//            the encode had fewer bits (each output averages original samples only:
//            cambi.cpp's in-place pass reads neighbours it has not rewritten yet)
//   flat     the spatial mask: more than `threshold` zero pixels in the clipped 7x7 window,
//            a zero pixel being equal to its right and lower neighbours (a missing one
//            counts as equal)
//   mode     one scale's picture: the previous scale's kept every `step`-th row and column,
//            then the separable 3x3 mode filter (first/last rows and columns as cambi.cpp);
//            and the scale's keys: per pixel its value where it counts (masked, in the
//            band), else a sentinel no value is near
//   contrast every scale in one dispatch (the scales' keys and values one after the other,
//            a table of their strips): per counted pixel of a scale, the counts of window pixels
//            (counted too) at the pixel's value and d + 1 above and below (from column counts,
//            below), and the largest weighted c value,
//            written as float bits. c = f32(w * p0 * p) * reciprocal[p0 + p] as cambi.cpp:
//            the integer's conversion rounded to nearest-even here in integer arithmetic
//            (WGSL lets a conversion round either way), one correctly rounded multiply, and
//            a max, which are exact in IEEE f32.
// The mask of scale s is the full-size mask at rows and columns that are multiples of
// 2^(s + halve-first): decimation keeps even rows and columns and the mask is never filtered.

struct Params {
  width: u32,        // this pass's picture
  height: u32,
  src_stride: u32,   // mode: the source picture's row length; prepare: the frame's width
  step: u32,         // mode: 1, or 2 to decimate
  mask_stride: u32,  // mode: the full-size mask's row length
  mask_shift: u32,   // mode: log2 of this scale's decimation from full size
  pad: u32,          // contrast: half the window
  out_at: u32,       // mode: the scale's first key in keys_out
  pic_word: u32,     // prepare: the luma plane's first word in the picture
  bit_depth: u32,    // prepare: the input's bits per sample
  anti_dither: u32,  // prepare: 1 when the encode had fewer than 10 bits
  threshold: u32,    // flat: the mask threshold
  diffs: u32,        // contrast: 2^max_log_contrast (at most 4)
  lowest_luma: u32,  // contrast: the visibility luma (0: none)
  band_base: u32,    // mode: the values a c value can depend on
  band_size: u32,
  frame_height: u32, // prepare: the frame's height (its width is src_stride)
}

// contrast: each scale's size, its first value in keys and values, its first workgroup and
// its workgroups per row; `tiles` the workgroups of every scale.
struct ScaleTiles {
  width: u32,
  height: u32,
  at: u32,
  first: u32,
  tiles_x: u32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
}
struct Tiles {
  tiles: u32,
  pad0: u32,
  pad1: u32,
  pad2: u32,
  scale: array<ScaleTiles, 5>,
}

// tables: [0, 32) the largest (value + diffs) at which step d + 1 is visible; [32, 64) the
// suprathreshold contrast weight of a step of d + 1; from 64 the float bits of the
// reciprocals 1/i that cambi.cpp uses; from COLS_AT the frame column of each encode-size
// column, then the frame row of each encode-size row. The counts below hold at most 2 * 4 + 1 values
// (max_log_contrast <= 2, which cambi-gpu.ts's supports() checks).
const WEIGHTS_AT: u32 = 32u;
const RECIPROCALS_AT: u32 = 64u;
const COLS_AT: u32 = RECIPROCALS_AT + 4226u;

@group(0) @binding(0) var<storage, read> pic: array<u32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<storage, read> mask: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;
@group(0) @binding(5) var<storage, read> tables: array<u32>;
@group(0) @binding(6) var<storage, read_write> counter: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(8) var<uniform> tiles: Tiles;

fn input_sample(i: u32) -> u32 {
  if (params.bit_depth <= 8u) {
    return (pic[params.pic_word + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu;
  }
  return (pic[params.pic_word + (i >> 1u)] >> ((i & 1u) * 16u)) & 0xffffu;
}

fn ten_bits(v: u32) -> u32 {
  let bpc = params.bit_depth;
  if (bpc <= 8u) {
    return v << (10u - bpc);
  }
  if (bpc == 9u) {
    return v << 1u;
  }
  let shift = bpc - 10u;
  let half = select(0u, 1u << (shift - 1u), shift > 0u);
  return ((v + half) >> shift) & 0xffffu;
}

fn converted(y: u32, x: u32) -> u32 {
  let row = tables[COLS_AT + params.width + y];
  let col = tables[COLS_AT + x];
  return ten_bits(input_sample(row * params.src_stride + col));
}

@compute @workgroup_size(16, 16)
fn prepare(@builtin(global_invocation_id) id: vec3<u32>) {
  let x = id.x;
  let y = id.y;
  let bpc = params.bit_depth;
  if (x < params.src_stride && y < params.frame_height && bpc != 8u && bpc != 16u) {
    if (input_sample(y * params.src_stride + x) > (1u << bpc) - 1u) {
      atomicAdd(&counter[0], 1u);  // a count: the same whatever the order
    }
  }
  let w = params.width;
  let h = params.height;
  if (x >= w || y >= h) {
    return;
  }
  var v = converted(y, x);
  if (params.anti_dither != 0u) {
    let right = x + 1u < w;
    let below = y + 1u < h;
    if (right && below) {
      v = (v + converted(y, x + 1u) + converted(y + 1u, x) + converted(y + 1u, x + 1u)) >> 2u;
    } else if (below) {
      v = (v + converted(y + 1u, x)) >> 1u;
    } else if (right) {
      v = (v + converted(y, x + 1u)) >> 1u;
    }
  }
  dst[y * w + x] = v;
}

// flat: a workgroup's 16x16 pixels of the mask. Their 7x7 windows cover a 22x22 region of
// zero flags, and the flags read one more row and column of samples: the 23x23 samples and
// the flags are made once per workgroup in its memory, each window's count is 7 row sums of
// 7 flags (column sums first). Flags outside the picture are 0, as the clipped window leaves
// them out: the same counts as reading the 49 flags of each window.
const FLAT_TILE: u32 = 16u;
const FLAT_REACH: u32 = 3u;
const FLAT_FLAGS: u32 = FLAT_TILE + 2u * FLAT_REACH;  // 22
const FLAT_SAMPLES: u32 = FLAT_FLAGS + 1u;  // 23
var<workgroup> flat_samples: array<u32, FLAT_SAMPLES * FLAT_SAMPLES>;
var<workgroup> flat_flags: array<u32, FLAT_FLAGS * FLAT_FLAGS>;
var<workgroup> flat_columns: array<u32, FLAT_FLAGS * FLAT_TILE>;  // 7 flags down, per flag column and output row

fn inside(x: i32, y: i32) -> bool {
  return x >= 0 && y >= 0 && x < i32(params.width) && y < i32(params.height);
}

@compute @workgroup_size(16, 16)
fn flat(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let w = params.width;
  let h = params.height;
  let x0 = i32(wg.x * FLAT_TILE) - i32(FLAT_REACH);
  let y0 = i32(wg.y * FLAT_TILE) - i32(FLAT_REACH);
  for (var i = li; i < FLAT_SAMPLES * FLAT_SAMPLES; i += 256u) {
    let x = x0 + i32(i % FLAT_SAMPLES);
    let y = y0 + i32(i / FLAT_SAMPLES);
    var v = 0u;
    if (inside(x, y)) {
      v = src[u32(y) * w + u32(x)];
    }
    flat_samples[i] = v;
  }
  workgroupBarrier();
  // A zero: equal to its right and lower neighbours, a missing one counting as equal; a
  // present neighbour is always within the samples.
  for (var i = li; i < FLAT_FLAGS * FLAT_FLAGS; i += 256u) {
    let tx = i % FLAT_FLAGS;
    let ty = i / FLAT_FLAGS;
    let x = x0 + i32(tx);
    let y = y0 + i32(ty);
    var zero = 0u;
    if (inside(x, y)) {
      let v = flat_samples[ty * FLAT_SAMPLES + tx];
      let right = x + 1 == i32(w) || v == flat_samples[ty * FLAT_SAMPLES + tx + 1u];
      let down = y + 1 == i32(h) || v == flat_samples[(ty + 1u) * FLAT_SAMPLES + tx];
      zero = select(0u, 1u, right && down);
    }
    flat_flags[i] = zero;
  }
  workgroupBarrier();
  for (var i = li; i < FLAT_FLAGS * FLAT_TILE; i += 256u) {
    let tx = i % FLAT_FLAGS;
    let row = i / FLAT_FLAGS;
    var sum = 0u;
    for (var k = 0u; k <= 2u * FLAT_REACH; k++) {
      sum += flat_flags[(row + k) * FLAT_FLAGS + tx];
    }
    flat_columns[i] = sum;
  }
  workgroupBarrier();
  let lx = li % FLAT_TILE;
  let ly = li / FLAT_TILE;
  let x = wg.x * FLAT_TILE + lx;
  let y = wg.y * FLAT_TILE + ly;
  if (x < w && y < h) {
    var count = 0u;
    for (var k = 0u; k <= 2u * FLAT_REACH; k++) {
      count += flat_columns[ly * FLAT_FLAGS + lx + k];
    }
    dst[y * w + x] = select(0u, 1u, count > params.threshold);
  }
}

fn mode_of3(a: u32, b: u32, c: u32) -> u32 {
  if (a == b || a == c) {
    return a;
  }
  if (b == c) {
    return b;
  }
  return min(a, min(b, c));
}

fn scale_sample(y: u32, x: u32) -> u32 {
  return src[y * params.step * params.src_stride + x * params.step];
}

fn row_mode(y: u32, x: u32) -> u32 {
  if (x == 0u || x + 1u == params.width) {
    return scale_sample(y, x);
  }
  return mode_of3(scale_sample(y, x - 1u), scale_sample(y, x), scale_sample(y, x + 1u));
}

@compute @workgroup_size(16, 16)
fn mode(@builtin(global_invocation_id) id: vec3<u32>) {
  let x = id.x;
  let y = id.y;
  let w = params.width;
  let h = params.height;
  if (x >= w || y >= h) {
    return;
  }
  var v: u32;
  if (y == 0u || y + 1u == h) {
    v = scale_sample(y, x);
  } else {
    v = mode_of3(row_mode(y - 1u, x), row_mode(y, x), row_mode(y + 1u, x));
  }
  dst[y * w + x] = v;
  let counted = masked(y, x) && v >= params.band_base && v < params.band_base + params.band_size;
  keys_out[params.out_at + y * w + x] = select(NOT_COUNTED, v, counted);
}

// The float nearest to n, ties to even (as C's int-to-float conversion rounds).
fn nearest_f32(n: u32) -> f32 {
  if (n < (1u << 24u)) {
    return f32(n);
  }
  let shift = firstLeadingBit(n) - 23u;
  var q = n >> shift;
  let rem = n & ((1u << shift) - 1u);
  let half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u) == 1u)) {
    q += 1u;
  }
  return f32(q) * f32(1u << shift);  // both exact, so is their product
}

fn masked(y: u32, x: u32) -> bool {
  return mask[(y << params.mask_shift) * params.mask_stride + (x << params.mask_shift)] != 0u;
}

// Far from every 10-bit value: |key - value| > diffs for any value.
const NOT_COUNTED: u32 = 1u << 30u;

// contrast: a workgroup's strip of CT_W columns and CT_H rows of one scale, its rows one after
// the other. Its counted pixels' values are handled in chunks of nearby values (from the
// smallest not yet handled, CT_BINS - 2 * diffs of them: the band any c value depends on
// takes a few); per chunk, each column of the strip's window region keeps the counts of its
// clipped vertical window's keys in CT_BINS bins (a byte each: at most 2 * 32 + 1 keys),
// moved down a row by adding the key that enters and removing the one that leaves, and a
// pixel's counts of value - n .. value + n are sums over the 2 * pad + 1 columns of its
// window (three words of bytes each, in 16-bit lanes: at most 65^2) instead of
// (2 * pad + 1)^2 reads of keys. The same integers as counting the window key by key.
const CT_W: u32 = 64u;
const CT_H: u32 = 16u;  // at most 32: a bit each
const CT_MAX_PAD: u32 = 32u;  // cambi.ts: windows of at most 65 pixels
const CT_COLS: u32 = CT_W + 2u * CT_MAX_PAD;  // two per invocation
const CT_WORDS: u32 = 30u;  // 15360 bytes of counts: WebGPU's default allows 16384
const CT_BINS: u32 = CT_WORDS * 4u;
// [word][column]: a warp's pixels read consecutive columns.
var<workgroup> col_counts: array<u32, CT_WORDS * CT_COLS>;
var<workgroup> chunk_low: atomic<u32>;
var<workgroup> chunk_rows: atomic<u32>;  // the rows holding pixels still pending
var<workgroup> chunk_plain: vec2<u32>;  // both, for a uniform load

// Column c's count of `key` (bins from `base`; keys out of them count nowhere) up or down by one.
fn col_count_step(c: u32, key: u32, base: u32, up: bool) {
  let k = key - base;  // wraps for keys below base
  if (k < CT_BINS) {
    let at = (k >> 2u) * CT_COLS + c;
    let one = 1u << ((k & 3u) * 8u);  // no carry or borrow: counts stay in 0..65
    col_counts[at] = select(col_counts[at] - one, col_counts[at] + one, up);
  }
}

// Region column c (plane column cx) at plane row y: its counts built (`first`) or moved down a row by the keys `moves` (entering, leaving) read a row ahead; returns the
// next row's (their wait overlaps this row's sums; those outside the plane count nowhere).
fn move_column(c: u32, cx: u32, y: u32, first: bool, w: u32, h: u32, at: u32, base: u32, pad: u32, moves: vec2<u32>) -> vec2<u32> {
  if (first) {
    for (var k = 0u; k < CT_WORDS; k++) {
      col_counts[k * CT_COLS + c] = 0u;
    }
    let y1 = min(y + pad, h - 1u);
    for (var yy = u32(max(i32(y) - i32(pad), 0)); yy <= y1; yy++) {
      col_count_step(c, src[at + yy * w + cx], base, true);
    }
  } else {
    col_count_step(c, moves.x, base, true);
    col_count_step(c, moves.y, base, false);
  }
  var next = vec2<u32>(NOT_COUNTED, NOT_COUNTED);
  if (y + 1u + pad < h) {
    next.x = src[at + (y + 1u + pad) * w + cx];
  }
  if (y >= pad) {
    next.y = src[at + (y - pad) * w + cx];
  }
  return next;
}

// Count j of the 2n + 1 from byte `first` of three words summed in 16-bit lanes (even bytes
// in e*, odd in o*).
fn lane_count(first: u32, j: u32, e0: u32, e1: u32, e2: u32, o0: u32, o1: u32, o2: u32) -> u32 {
  let q = first + j;
  let word = q >> 2u;
  let odd = (q & 1u) == 1u;
  let e = select(select(e0, e1, word == 1u), e2, word == 2u);
  let o = select(select(o0, o1, word == 1u), o2, word == 2u);
  return (select(e, o, odd) >> (((q >> 1u) & 1u) * 16u)) & 0xffffu;
}

// The largest weighted c value of a pixel at `value` from its window's counts of the values
// value - n .. value + n (cambi.cpp's order of operations).
fn best_contrast(value: u32, n: u32, counts: array<u32, 9>) -> f32 {
  var best = 0.0f;
  let p0 = counts[n];
  let shifted = i32(value + n);
  for (var d = 0u; d < n; d++) {
    if (shifted > i32(tables[d]) || shifted + i32(d) + 1 <= i32(params.lowest_luma)) {
      continue;
    }
    let p = max(counts[n + d + 1u], counts[n - d - 1u]);
    let c = nearest_f32(tables[WEIGHTS_AT + d] * p0 * p) * bitcast<f32>(tables[RECIPROCALS_AT + p + p0]);
    if (c > best) {
      best = c;
    }
  }
  return best;
}

@compute @workgroup_size(64)
fn contrast(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let g = wg.y * nwg.x + wg.x;
  if (g >= tiles.tiles) {
    return;  // the whole workgroup
  }
  var s = 0u;
  while (s + 1u < 5u && g >= tiles.scale[s + 1u].first) {
    s++;
  }
  let sc = tiles.scale[s];
  let tile = g - sc.first;
  let tx0 = (tile % sc.tiles_x) * CT_W;
  let ty0 = (tile / sc.tiles_x) * CT_H;
  let w = sc.width;
  let h = sc.height;
  let at = sc.at;
  let n = params.diffs;
  let pad = params.pad;
  // Invocation li owns the strip's column x: its counted pixels are pending (bit r
  // for row r), the others' c is 0.
  let x = tx0 + li;
  var pending = 0u;
  if (x < w) {
    for (var r = 0u; r < CT_H && ty0 + r < h; r++) {
      let i = at + (ty0 + r) * w + x;
      if (src[i] != NOT_COUNTED) {
        pending |= 1u << r;
      } else {
        dst[i] = 0u;
      }
    }
  }
  // Invocation li keeps the counts of region columns li and li + CT_W (region column 0 is
  // plane column tx0 - pad) where they are in the plane.
  let xa = i32(tx0) - i32(pad) + i32(li);
  let xb = xa + i32(CT_W);
  let column_a = xa >= 0 && xa < i32(w);
  let column_b = li + CT_W < CT_W + 2u * pad && xb < i32(w);
  // The owned pixel's window columns, as region columns.
  let c0 = u32(max(i32(x) - i32(pad), 0) - (i32(tx0) - i32(pad)));
  let c1 = u32(min(i32(x) + i32(pad), i32(w) - 1) - (i32(tx0) - i32(pad)));
  let span = CT_BINS - 2u * n;
  loop {
    if (li == 0u) {
      atomicStore(&chunk_low, NOT_COUNTED);
      atomicStore(&chunk_rows, 0u);
    }
    workgroupBarrier();
    if (pending != 0u) {
      var low = NOT_COUNTED;
      for (var r = 0u; r < CT_H; r++) {
        if (((pending >> r) & 1u) != 0u) {
          low = min(low, src[at + (ty0 + r) * w + x]);
        }
      }
      atomicMin(&chunk_low, low);
      atomicOr(&chunk_rows, pending);
    }
    workgroupBarrier();
    if (li == 0u) {
      chunk_plain = vec2<u32>(atomicLoad(&chunk_low), atomicLoad(&chunk_rows));
    }
    let chunk = workgroupUniformLoad(&chunk_plain);
    let low = chunk.x;
    if (low == NOT_COUNTED) {
      break;
    }
    let base = low - n;  // wraps below zero, as the keys' differences do
    var moves_a = vec2<u32>(NOT_COUNTED, NOT_COUNTED);
    var moves_b = vec2<u32>(NOT_COUNTED, NOT_COUNTED);
    // Only the rows from the first to the last holding a pending pixel (all in the plane).
    let r0 = firstTrailingBit(chunk.y);
    for (var r = r0; r <= firstLeadingBit(chunk.y); r++) {
      let y = ty0 + r;
      if (column_a) {
        moves_a = move_column(li, u32(xa), y, r == r0, w, h, at, base, pad, moves_a);
      }
      if (column_b) {
        moves_b = move_column(li + CT_W, u32(xb), y, r == r0, w, h, at, base, pad, moves_b);
      }
      workgroupBarrier();
      if (((pending >> r) & 1u) != 0u) {
        let value = src[at + y * w + x];
        let o = value - low;  // its counts are bins o .. o + 2n
        if (o < span) {
          pending &= ~(1u << r);
          let w0 = o >> 2u;
          let w1 = min(w0 + 1u, CT_WORDS - 1u);  // past the last word only where no count is read
          let w2 = min(w0 + 2u, CT_WORDS - 1u);
          var e0 = 0u;
          var e1 = 0u;
          var e2 = 0u;
          var o0 = 0u;
          var o1 = 0u;
          var o2 = 0u;
          // Three columns' bytes add up in place (at most 3 * 65), then spread to 16 bits.
          for (var c = c0; c <= c1; c += 3u) {
            var a = col_counts[w0 * CT_COLS + c];
            var b = col_counts[w1 * CT_COLS + c];
            var d = col_counts[w2 * CT_COLS + c];
            if (c + 1u <= c1) {
              a += col_counts[w0 * CT_COLS + c + 1u];
              b += col_counts[w1 * CT_COLS + c + 1u];
              d += col_counts[w2 * CT_COLS + c + 1u];
            }
            if (c + 2u <= c1) {
              a += col_counts[w0 * CT_COLS + c + 2u];
              b += col_counts[w1 * CT_COLS + c + 2u];
              d += col_counts[w2 * CT_COLS + c + 2u];
            }
            e0 += a & 0x00ff00ffu;
            o0 += (a >> 8u) & 0x00ff00ffu;
            e1 += b & 0x00ff00ffu;
            o1 += (b >> 8u) & 0x00ff00ffu;
            e2 += d & 0x00ff00ffu;
            o2 += (d >> 8u) & 0x00ff00ffu;
          }
          var counts = array<u32, 9>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
          for (var j = 0u; j <= 2u * n; j++) {
            counts[j] = lane_count(o & 3u, j, e0, e1, e2, o0, o1, o2);
          }
          dst[at + y * w + x] = bitcast<u32>(best_contrast(value, n, counts));
        }
      }
      workgroupBarrier();
    }
  }
}
