// #include "../lib/luma.wgsl"
//
// motion.wgsl: libvmaf 3.2.0's integer motion SAD (src/kernels/cpu/motion.h is the spec).
//
// P = previous, C = current reference luma, f = {3571, 16004, 26386, 16004, 3571}, m() the
// mirror without edge repeat (-1 -> 1, n -> n - 2). Per row y:
//   Y[x] = (sum_k f[k] * (P - C)[m(y-2+k, h)][x] + 2^(bd-1)) >> bd      (vertical, rounded)
//   H[x] = (sum_k f[k] * Y[m(x-2+k, w)] + 2^15) >> 16                   (horizontal, rounded)
//   row  = sum_x |H[x]|, wrapping in a u32
// SAD = sum of the rows, a u64.
//
// Exact in 32-bit arithmetic: each sum of five products needs 33 bits, so an operand v is
// split into hi * 2^16 + lo with lo = v & 0xffff (unsigned) and hi = v >> 16 (arithmetic):
//   floor((sum f*v + r) / 2^s) = sum f*hi * 2^(16-s) + ((sum f*lo + r) >> s)    (s <= 16)
// sum f*lo <= 65535 * 65536 < 2^32 and r <= 2^15 keeps the right part inside a u32, and the
// split is an identity on integers, so the floors agree with the int64 arithmetic of the cpu
// backend for every sample value a u16 can hold (even beyond the stated bit depth).
//
// One workgroup per row (workgroup_id.x = y): chunks of WG columns; each chunk's Y (plus
// a 2-column apron on either side, mirrored) goes to workgroup memory, then each
// invocation filters one column horizontally. The row's u32 sum is a fixed tree; the
// rows meet in the u64 at stats[OUT_WORD..OUT_WORD+1] through atomicAdd on the low word
// with the carry added to the high word: exact and order independent (addition modulo
// 2^64). The host clears those 8 bytes before the pass.

const WG: u32 = 256u;
const F0: i32 = 3571;
const F1: i32 = 16004;
const F2: i32 = 26386;

override WIDTH: u32;
override HEIGHT: u32;
override BIT_DEPTH: u32;

struct Params {
  out_word: u32, // word index of the SAD's low word in `stats`
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<storage, read> prev_luma: array<u32>;
@group(0) @binding(1) var<storage, read> cur_luma: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> ys: array<i32, 260>; // WG + 4
var<workgroup> sums: array<u32, WG>;

fn mirror(i: i32, n: i32) -> i32 {
  if (i < 0) { return -i; }
  if (i >= n) { return 2 * n - i - 2; }
  return i;
}

fn diff_at(i: u32) -> i32 {
  if (BIT_DEPTH > 8u) {
    return i32(luma_sample_16(&prev_luma, i)) - i32(luma_sample_16(&cur_luma, i));
  }
  return i32(luma_sample_8(&prev_luma, i)) - i32(luma_sample_8(&cur_luma, i));
}

fn tap(k: u32) -> i32 {
  switch k {
    case 0u, 4u: { return F0; }
    case 1u, 3u: { return F1; }
    default: { return F2; }
  }
}

// Y at column x (0 <= x < WIDTH) of row y.
fn vertical(x: u32, y: i32) -> i32 {
  var hi: i32 = 0;
  var lo: u32 = 0u;
  for (var k = 0u; k < 5u; k = k + 1u) {
    let r = u32(mirror(y - 2 + i32(k), i32(HEIGHT)));
    let d = diff_at(r * WIDTH + x);
    let f = tap(k);
    hi = hi + f * (d >> 16u);
    lo = lo + u32(f) * u32(d & 0xffff);
  }
  let half = 1u << (BIT_DEPTH - 1u);
  return hi * (1 << (16u - BIT_DEPTH)) + i32((lo + half) >> BIT_DEPTH);
}

// |H| at the column whose five Y values start at ys[j].
fn horizontal_abs(j: u32) -> u32 {
  var hi: i32 = 0;
  var lo: u32 = 0u;
  for (var k = 0u; k < 5u; k = k + 1u) {
    let v = ys[j + k];
    let f = tap(k);
    hi = hi + f * (v >> 16u);
    lo = lo + u32(f) * u32(v & 0xffff);
  }
  let h = hi + i32((lo + 32768u) >> 16u);
  return u32(abs(h));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let y = i32(wg.x);
  var acc: u32 = 0u;
  for (var c0 = 0u; c0 < WIDTH; c0 = c0 + WG) {
    // Y for columns c0 - 2 .. c0 + WG + 1 (those past WIDTH + 1 are never read).
    let col = i32(c0) - 2 + i32(lid);
    if (col <= i32(WIDTH) + 1) {
      ys[lid] = vertical(u32(mirror(col, i32(WIDTH))), y);
    }
    if (lid < 4u) {
      let col2 = i32(c0 + WG) - 2 + i32(lid);
      if (col2 <= i32(WIDTH) + 1) {
        ys[WG + lid] = vertical(u32(mirror(col2, i32(WIDTH))), y);
      }
    }
    workgroupBarrier();
    if (c0 + lid < WIDTH) {
      acc = acc + horizontal_abs(lid);
    }
    workgroupBarrier();
  }
  sums[lid] = acc;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) {
      sums[lid] = sums[lid] + sums[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let row = sums[0];
    let w = params.out_word;
    let old = atomicAdd(&stats[w], row);
    if (old + row < old) {
      atomicAdd(&stats[w + 1u], 1u);
    }
  }
}
