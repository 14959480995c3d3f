// The layout of the float extractors' serial sums (float_motion, float_vif, float_adm and
// float_ansnr's row_sums and total), which must add in libvmaf's order: a row's terms in
// column order, then the rows' sums in row order, each a sequential chain on one invocation.
// One invocation per row reading its own row would make neighbouring invocations' loads a row
// apart (uncoalesced) and put each load's latency on the chain. Instead:
//
// row_sums: a workgroup of SR_THREADS invocations owns SR_ROWS rows. Per tile of SR_TILE
// columns every invocation loads SR_PER of the tile's words, consecutive invocations on
// consecutive columns (coalesced, and many loads in flight), into workgroup memory; after a
// barrier the first SR_ROWS invocations each add their row's SR_TILE words in column order.
// The next tile's loads are issued before the adds (they overlap the chain). A word's place in
// the tile is swizzled (column c of row r at r * SR_TILE + (c + r) % SR_TILE) so the summing
// invocations, all at one column, read different banks.
//
// total: one workgroup of SR_THREADS loads SR_CHUNK row sums at a time into workgroup memory
// (coalesced), and invocation 0 adds them in row order.
//
// Every invocation reaches every barrier (no early return: out-of-range rows and columns load
// nothing and add nothing), and the loops' bounds are uniform (params).

const SR_ROWS: u32 = 16u;
const SR_THREADS: u32 = 256u;
const SR_TILE: u32 = 64u;
const SR_PER: u32 = SR_ROWS * SR_TILE / SR_THREADS;
const SR_CHUNK: u32 = 1024u;

// Where invocation lid's k-th word of a tile lies in it: (row, column).
fn sr_place(lid: u32, k: u32) -> vec2<u32> {
  let i = k * SR_THREADS + lid;
  return vec2<u32>(i / SR_TILE, i % SR_TILE);
}

// Word (row r, column c) of a tile in workgroup memory.
fn sr_word(r: u32, c: u32) -> u32 {
  return r * SR_TILE + (c + r) % SR_TILE;
}
