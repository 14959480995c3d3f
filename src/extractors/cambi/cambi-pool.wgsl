// #include "../../kernels/gpu/lib/reduce-i64.wgsl"
//
// CAMBI's spatial pooling of a picture's contrast values, every scale in the same dispatches
// (driven by cambi-picture.ts), so that a frame reads back a few numbers instead of every c
// value. libvmaf averages each scale's top k values in double, in the order its selection
// leaves them; that order only matters when a partial sum rounds. Here:
//   hist / chunk / select  radix selection of the k-th largest value T over the float bits
//   (twice)                (c >= 0, so bit order is value order): a count per high half,
//                          the bucket holding the k-th, then a count per low half within it.
//                          Integer atomic counts (a histogram per scale): the same whatever
//                          the order.
//   sum                    the exact sum of the values above T in units of 2^-40 (each an
//                          integer below 2^62, split in 32-bit halves, i64 workgroup sums
//                          into per-workgroup partials), the smallest power of two that
//                          divides them all, and a count of values outside the units' range.
//   total                  one workgroup per scale adds its partials in a fixed order (exact
//                          modulo 2^64, as reduce-i64 would).
// cambi.cpp's finishStats adds (k - above) * T and, when every partial sum of any order is a
// double (the total below 2^53 times that power of two), gives libvmaf's mean exactly; the
// rare frames where it is not are pooled on the host from the values (cambi-gpu.ts).
//
// hist and sum run one workgroup per POOL_CHUNK values of every scale, one after the other
// (the scale's `first` workgroup on); chunk one per 256 bins of every scale; select and
// total one workgroup per scale.

const REDUCE_WG_SIZE: u32 = 256u;
const ITEMS: u32 = 4u;
const BINS: u32 = 65536u;
const SCALES: u32 = 5u;

struct Scale {
  count: u32,    // values in this scale
  at: u32,       // its first value in `values`
  k: u32,        // how many of the largest are pooled
  result: u32,   // its first word in `result`
  partials: u32, // its first i64 in `partials` (lo halves, then hi halves)
  groups: u32,   // its workgroups in hist and sum
  first: u32,    // the first of them in those dispatches
  pad: u32,
}

struct Params {
  level: u32,    // hist/select: 0 the high halves, 1 the low halves within the chosen bucket
  pad0: u32,
  pad1: u32,
  pad2: u32,
  scale: array<Scale, SCALES>,
}

@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> result: array<atomic<u32>>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read_write> partials: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> kept: array<u32>;

// result, per scale (8 words, four u64 accumulators):
//   0 T's bits        1 how many values exceed T
//   2, 3 the sum of the low halves (total)     4, 5 the sum of the high halves
//   6 1024 - the smallest (biased exponent + trailing zeros) of the values above T (0: none)
//   7 values above T outside the units' range
// select keeps the chosen high half and the count above its bucket in words 0 and 1
// between the two levels; its first level zeroes words 6 and 7, total writes 2 to 5, so
// that no word needs clearing between frames.

// The scale of a workgroup of hist or sum (a uniform value: from the workgroup's id).
fn scale_of(g: u32) -> u32 {
  var s = 0u;
  while (s + 1u < SCALES && g >= params.scale[s + 1u].first) {
    s++;
  }
  return s;
}

// Most c values are 0 (unmasked pixels, no visible step): their bin 0 is counted in the
// workgroup first, so that the device's atomics on one word do not serialise.
var<workgroup> zero_bin: atomic<u32>;

@compute @workgroup_size(REDUCE_WG_SIZE)
fn hist_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = scale_of(wg.x);
  let sc = params.scale[s];
  let base = (wg.x - sc.first) * REDUCE_WG_SIZE * ITEMS + lid;
  let bins = s * BINS;
  let level = params.level;
  let high = atomicLoad(&result[sc.result]);
  if (lid == 0u) {
    atomicStore(&zero_bin, 0u);
  }
  workgroupBarrier();
  for (var j = 0u; j < ITEMS; j++) {
    let i = base + j * REDUCE_WG_SIZE;
    if (i >= sc.count) {
      break;
    }
    let bits = values[sc.at + i];
    if (level == 0u || (bits >> 16u) == high) {
      let bin = select(bits & 0xffffu, bits >> 16u, level == 0u);
      if (bin == 0u) {
        atomicAdd(&zero_bin, 1u);
      } else {
        atomicAdd(&hist[bins + bin], 1u);
      }
    }
  }
  workgroupBarrier();
  if (lid == 0u) {
    let zeros = atomicLoad(&zero_bin);
    if (zeros != 0u) {
      atomicAdd(&hist[bins], zeros);
    }
  }
}

// The histogram in CHUNKS chunks of REDUCE_WG_SIZE bins. chunk_pass, one workgroup per
// chunk of every scale (so the whole device reads the histograms, not one workgroup per
// scale), moves each chunk's bins into `kept`, zeroes them for the histogram's next use, and
// writes the chunk's total after every scale's kept bins: select then reads 2 x 256 words.
const CHUNKS: u32 = BINS / REDUCE_WG_SIZE;
const KEPT_TOTALS: u32 = SCALES * BINS;

var<workgroup> tree: array<u32, REDUCE_WG_SIZE>;

@compute @workgroup_size(REDUCE_WG_SIZE)
fn chunk_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let bin = wg.x * REDUCE_WG_SIZE + lid; // scale wg.x / CHUNKS, chunk wg.x % CHUNKS
  let count = atomicLoad(&hist[bin]);
  atomicStore(&hist[bin], 0u);
  kept[bin] = count;
  tree[lid] = count;
  workgroupBarrier();
  // Integer counts (at most the pixels of a scale): any order of adds gives the same total.
  for (var half = REDUCE_WG_SIZE / 2u; half > 0u; half >>= 1u) {
    if (lid < half) {
      tree[lid] += tree[lid + half];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    kept[KEPT_TOTALS + wg.x] = tree[0];
  }
}

var<workgroup> suffix: array<u32, REDUCE_WG_SIZE + 1u>;
var<workgroup> picked: u32;

// Where a walk from the top of `counts` (REDUCE_WG_SIZE entries, loaded by the caller as
// suffix[lid]) stops: the highest index i with above + counts[i] + (everything past i) >= k,
// or 0 when none does; returns i and leaves the sum of counts past i in suffix[i + 1].
// Each invocation tests its own index against the suffix sums (Hillis-Steele, exact
// integers), which is the serial walk's answer: the test only fails further up.
fn walk_down(lid: u32, above: u32, k: u32) -> u32 {
  if (lid == 0u) {
    suffix[REDUCE_WG_SIZE] = 0u;
  }
  for (var step = 1u; step < REDUCE_WG_SIZE; step <<= 1u) {
    workgroupBarrier();
    let add = select(0u, suffix[lid + step], lid + step < REDUCE_WG_SIZE);
    workgroupBarrier();
    suffix[lid] += add;
  }
  workgroupBarrier();
  let here = above + suffix[lid] >= k;
  let next = lid + 1u < REDUCE_WG_SIZE && above + suffix[lid + 1u] >= k;
  if ((here && !next) || (lid == 0u && !here)) {
    picked = lid;
  }
  workgroupBarrier();
  return picked;
}

// One workgroup per scale: finds the bin holding the k-th largest value, counting from the
// top, from chunk_pass's totals and the chosen chunk's kept bins.
@compute @workgroup_size(REDUCE_WG_SIZE)
fn select_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = wg.x;
  let sc = params.scale[s];
  let level = params.level;
  let above_before = select(0u, atomicLoad(&result[sc.result + 1u]), level == 1u);
  suffix[lid] = kept[KEPT_TOTALS + s * CHUNKS + lid];
  let c = walk_down(lid, above_before, sc.k);
  let above_chunk = above_before + suffix[c + 1u];
  workgroupBarrier();
  suffix[lid] = kept[s * BINS + c * REDUCE_WG_SIZE + lid];
  let b = walk_down(lid, above_chunk, sc.k);
  if (lid == 0u) {
    let bin = c * REDUCE_WG_SIZE + b;
    if (level == 0u) {
      atomicStore(&result[sc.result], bin);
      atomicStore(&result[sc.result + 6u], 0u);
      atomicStore(&result[sc.result + 7u], 0u);
    } else {
      atomicStore(&result[sc.result], (atomicLoad(&result[sc.result]) << 16u) | bin);
    }
    atomicStore(&result[sc.result + 1u], above_chunk + suffix[b + 1u]);
  }
}

@compute @workgroup_size(REDUCE_WG_SIZE)
fn sum_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let s = scale_of(wg.x);
  let sc = params.scale[s];
  let local = wg.x - sc.first;
  let base = local * REDUCE_WG_SIZE * ITEMS + lid;
  let t = atomicLoad(&result[sc.result]);
  var lo = vec2<u32>(0u, 0u);
  var hi = vec2<u32>(0u, 0u);
  var smallest = 0u;
  var outside = 0u;
  for (var j = 0u; j < ITEMS; j++) {
    let i = base + j * REDUCE_WG_SIZE;
    if (i >= sc.count) {
      break;
    }
    let bits = values[sc.at + i];
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
  let lo_total = workgroup_sum_i64(lid, lo);
  let hi_total = workgroup_sum_i64(lid, hi);
  if (lid == 0u) {
    partials[sc.partials + local] = lo_total;
    partials[sc.partials + sc.groups + local] = hi_total;
  }
  if (smallest != 0u) {
    atomicMax(&result[sc.result + 6u], smallest);
  }
  if (outside != 0u) {
    atomicAdd(&result[sc.result + 7u], outside);
  }
}

// The sum of one half's partials of a scale: each invocation adds every REDUCE_WG_SIZE-th
// in order, then the workgroup tree.
fn partials_sum(lid: u32, start: u32, n: u32) -> vec2<u32> {
  var acc = vec2<u32>(0u, 0u);
  for (var i = lid; i < n; i += REDUCE_WG_SIZE) {
    acc = i64_add(acc, partials[start + i]);
  }
  return workgroup_sum_i64(lid, acc);
}

@compute @workgroup_size(REDUCE_WG_SIZE)
fn total_pass(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let sc = params.scale[wg.x];
  let lo = partials_sum(lid, sc.partials, sc.groups);
  let hi = partials_sum(lid, sc.partials + sc.groups, sc.groups);
  if (lid == 0u) {
    atomicStore(&result[sc.result + 2u], lo.x);
    atomicStore(&result[sc.result + 3u], lo.y);
    atomicStore(&result[sc.result + 4u], hi.x);
    atomicStore(&result[sc.result + 5u], hi.y);
  }
}
