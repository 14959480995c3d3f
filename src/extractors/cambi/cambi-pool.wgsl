// #include "../../kernels/gpu/lib/reduce-i64.wgsl"
//
// CAMBI's spatial pooling of one scale's contrast values (driven by cambi-gpu.ts), so that
// a frame reads back a few numbers instead of every c value. libvmaf averages the top k
// values in double, in the order its selection leaves them; that order only matters when a
// partial sum rounds. Here:
//   hist / select (twice)  radix selection of the k-th largest value T over the float bits
//                          (c >= 0, so bit order is value order): a count per high half,
//                          the bucket holding the k-th, then a count per low half within it.
//                          Integer atomic counts: the same whatever the order.
//   sum                    the exact sum of the values above T in units of 2^-40 (each an
//                          integer below 2^62, split in 32-bit halves, i64 workgroup sums,
//                          then reduce-i64), the smallest power of two that divides them all,
//                          and a count of values outside the units' range.
// cambi.cpp's finishStats adds (k - above) * T and, when every partial sum of any order is a
// double (the total below 2^53 times that power of two), gives libvmaf's mean exactly; the
// rare frames where it is not are pooled on the host from the values (cambi-gpu.ts).

const REDUCE_WG_SIZE: u32 = 256u;
const ITEMS: u32 = 4u;
const BINS: u32 = 65536u;

struct Params {
  count: u32,    // values in this scale
  at: u32,       // its first value in `values`
  k: u32,        // how many of the largest are pooled
  level: u32,    // hist/select: 0 the high halves, 1 the low halves within the chosen bucket
  result: u32,   // the scale's first word in `result`
  partials: u32, // sum: the scale's first i64 in `partials` (lo halves, then hi halves)
  groups: u32,   // sum: its workgroups
  pad: u32,
}

@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> result: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2<u32>>;

// result, per scale (8 words, four u64 accumulators):
//   0 T's bits        1 how many values exceed T
//   2, 3 the sum of the low halves (reduce-i64)     4, 5 the sum of the high halves
//   6 1024 - the smallest (biased exponent + trailing zeros) of the values above T (0: none)
//   7 values above T outside the units' range
// select keeps the chosen high half and the count above its bucket in words 0 and 1
// between the two levels.

fn linear(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
  return ((wg.y * nwg.x + wg.x) * REDUCE_WG_SIZE) * ITEMS + lid;
}

// Most c values are 0 (unmasked pixels, no visible step): their bin 0 is counted in the
// workgroup first, so that the device's atomics on one word do not serialise.
var<workgroup> zero_bin: atomic<u32>;

@compute @workgroup_size(REDUCE_WG_SIZE)
fn hist_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let base = linear(wg, nwg, lid);
  let high = atomicLoad(&result[params.result]);
  if (lid == 0u) {
    atomicStore(&zero_bin, 0u);
  }
  workgroupBarrier();
  for (var j = 0u; j < ITEMS; j++) {
    let i = base + j * REDUCE_WG_SIZE;
    if (i >= params.count) {
      break;
    }
    let bits = values[params.at + i];
    if (params.level == 0u || (bits >> 16u) == high) {
      let bin = select(bits & 0xffffu, bits >> 16u, params.level == 0u);
      if (bin == 0u) {
        atomicAdd(&zero_bin, 1u);
      } else {
        atomicAdd(&hist[bin], 1u);
      }
    }
  }
  workgroupBarrier();
  if (lid == 0u) {
    let zeros = atomicLoad(&zero_bin);
    if (zeros != 0u) {
      atomicAdd(&hist[0], zeros);
    }
  }
}

var<workgroup> chunk_sums: array<u32, REDUCE_WG_SIZE>;
var<workgroup> chunk_bins: array<u32, REDUCE_WG_SIZE>;
var<workgroup> chosen: u32;

// One workgroup: finds the bin holding the k-th largest value, counting from the top, and
// zeroes the histogram for the next use.
@compute @workgroup_size(REDUCE_WG_SIZE)
fn select_pass(@builtin(local_invocation_index) lid: u32) {
  let per = BINS / REDUCE_WG_SIZE;
  var total = 0u;
  for (var j = 0u; j < per; j++) {
    total += atomicLoad(&hist[lid * per + j]);
  }
  chunk_sums[lid] = total;
  let above_before = select(0u, atomicLoad(&result[params.result + 1u]), params.level == 1u);
  workgroupBarrier();
  if (lid == 0u) {
    var above = above_before;
    var c = REDUCE_WG_SIZE - 1u;
    loop {
      if (above + chunk_sums[c] >= params.k || c == 0u) {
        break;
      }
      above += chunk_sums[c];
      c -= 1u;
    }
    chosen = c;
    chunk_sums[0] = above;  // everyone has read its own sum already
  }
  workgroupBarrier();
  let c = chosen;
  chunk_bins[lid] = atomicLoad(&hist[c * per + lid]);
  workgroupBarrier();
  for (var j = 0u; j < per; j++) {
    atomicStore(&hist[lid * per + j], 0u);
  }
  if (lid == 0u) {
    var above = chunk_sums[0];
    var b = per - 1u;
    loop {
      if (above + chunk_bins[b] >= params.k || b == 0u) {
        break;
      }
      above += chunk_bins[b];
      b -= 1u;
    }
    let bin = c * per + b;
    if (params.level == 0u) {
      atomicStore(&result[params.result], bin);
    } else {
      atomicStore(&result[params.result], (atomicLoad(&result[params.result]) << 16u) | bin);
    }
    atomicStore(&result[params.result + 1u], above);
  }
}

@compute @workgroup_size(REDUCE_WG_SIZE)
fn sum_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let base = linear(wg, nwg, lid);
  let t = atomicLoad(&result[params.result]);
  var lo = vec2<u32>(0u, 0u);
  var hi = vec2<u32>(0u, 0u);
  var smallest = 0u;
  var outside = 0u;
  for (var j = 0u; j < ITEMS; j++) {
    let i = base + j * REDUCE_WG_SIZE;
    if (i >= params.count) {
      break;
    }
    let bits = values[params.at + i];
    if (bits <= t) {
      continue;
    }
    let e = bits >> 23u;
    // Units of 2^-40: the value's 24-bit significand shifted by e - 110; 2^-17 <= v < 2^22.
    if (e < 110u || e > 148u) {
      outside += 1u;
      continue;
    }
    let m = (bits & 0x7fffffu) | 0x800000u;
    let shift = e - 110u;
    let units = i64_shl(vec2<u32>(m, 0u), shift);
    lo = i64_add_u32(lo, units.x);
    hi = i64_add_u32(hi, units.y);
    smallest = max(smallest, 1024u - (e + countTrailingZeros(m)));
  }
  let wg_index = wg.y * nwg.x + wg.x;
  let lo_total = workgroup_sum_i64(lid, lo);
  let hi_total = workgroup_sum_i64(lid, hi);
  if (lid == 0u) {
    partials[params.partials + wg_index] = lo_total;
    partials[params.partials + params.groups + wg_index] = hi_total;
  }
  if (smallest != 0u) {
    atomicMax(&result[params.result + 6u], smallest);
  }
  if (outside != 0u) {
    atomicAdd(&result[params.result + 7u], outside);
  }
}
