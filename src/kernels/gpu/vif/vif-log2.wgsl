// #include "../lib/i64.wgsl"
//
// vif-log2.wgsl: libvmaf's fixed-point log2 (Q11) of VIF, from the table that vif-kernel.ts
// uploads (vifLog2Table(): T[i - 32768] = round(float(log2(i)) * 2048), i in [32768, 65535],
// two entries per word, entry i in bits 16 * (i & 1) of word i >> 1). The including shader
// declares the table as
//
//     var<storage, read> log2_tab: array<u32>;

fn vif_log2_table(v: u32) -> u32 {
  let i = v - 32768u;
  return (log2_tab[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
}

// log2(x) * 2048 for 2^17 <= x < 2^32: the top 16 bits index the table, the rest adds
// 2048 per dropped bit.
fn log2q32(x: u32) -> u32 {
  let k = 16u - countLeadingZeros(x);
  return vif_log2_table(x >> k) + 2048u * k;
}

// The same for 2^17 <= x < 2^64.
fn log2q64(x: vec2<u32>) -> u32 {
  if (x.y == 0u) {
    return log2q32(x.x);
  }
  let k = 48u - countLeadingZeros(x.y);
  return vif_log2_table(u64_shr(x, k).x) + 2048u * k;
}
