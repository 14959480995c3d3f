// #include "adm-decouple.wgsl"
//
// adm-dwt.wgsl (library): what the two DWT passes, adm-dwt0.wgsl (scale 0, on the luma
// planes) and adm-dwtn.wgsl (scales 1..3, on the previous scale's LL bands), have in
// common: their parameters and outputs (bindings 2..5; their inputs, bindings 0 and 1, are
// their own), the workgroup tiles and how the tiles are walked. Each pass is one workgroup
// per ADM_TW x ADM_TH tile of band positions (see adm-dwt0.wgsl).

struct DwtParams {
  size: vec4<u32>,   // input width, input height, band width w, band height h
  org: vec4<u32>,    // band x, y of tile (0, 0); write_ll; scale
  grown: vec4<u32>,  // left, right, top, bottom (half-open): where decouple/CSF are stored
  base: vec4<u32>,   // f_base, m_base, CSF weight h/v, d (scale 0: Q21, Q23; scales 1..3: Q32)
  shifts: vec4<u32>, // scales 1..3: vertical shift (0 or 16), horizontal shift (15 or 16)
  gain0: vec4<u32>,  // gain limit of variant 0 (adm-decouple.wgsl)
  gain1: vec4<u32>,  // gain limit of variant 1
}

@group(0) @binding(2) var<storage, read_write> ll_out: array<i32>;
@group(0) @binding(3) var<storage, read_write> fbuf: array<vec4<i32>>;
@group(0) @binding(4) var<storage, read_write> mbuf: array<vec4<u32>>;
@group(0) @binding(5) var<uniform> P: DwtParams;

var<workgroup> tile_in: array<i32, 2u * ADM_IN_H * ADM_IN_W>;  // [img][row][col]
var<workgroup> tile_v: array<i32, 4u * ADM_TH * ADM_IN_W>;     // [img][lo, hi][row][col]

// Element i of tile_in, the input window of the tile whose first band position is
// (x0, y0): rows 2 y0 - 1 .. 2 y0 + 2 TH, columns 2 x0 - 1 .. 2 x0 + 2 TW of an in_w x in_h
// input, mirrored at its borders, for both images. Returns (the image: 0 ref, 1 dis; the
// sample's offset sy * in_w + sx in that image's plane).
fn dwt_window_source(i: u32, x0: u32, y0: u32, in_w: u32, in_h: u32) -> vec2<u32> {
  let img = i / (ADM_IN_H * ADM_IN_W);
  let rc = i - img * (ADM_IN_H * ADM_IN_W);
  let r = rc / ADM_IN_W;
  let c = rc - r * ADM_IN_W;
  let sy = u32(adm_mirror(i32(2u * y0 + r) - 1, i32(in_h)));
  let sx = u32(adm_mirror(i32(2u * x0 + c) - 1, i32(in_w)));
  return vec2<u32>(img, sy * in_w + sx);
}

// Element i (< 2 ADM_TH ADM_IN_W) of the vertical filter: the lo and hi coefficients of
// image img, tile row r, column c. Returns (the tile_in index of its first tap, the next
// three each ADM_IN_W further on; the tile_v index of its lo, hi being ADM_TH ADM_IN_W
// further on).
fn dwt_vertical_at(i: u32) -> vec2<u32> {
  let img = i / (ADM_TH * ADM_IN_W);
  let rc = i - img * (ADM_TH * ADM_IN_W);
  let r = rc / ADM_IN_W;
  let c = rc - r * ADM_IN_W;
  let b = img * (ADM_IN_H * ADM_IN_W) + 2u * r * ADM_IN_W + c;
  let o = (img * 2u * ADM_TH + r) * ADM_IN_W + c;
  return vec2<u32>(b, o);
}

// The LL coefficients of ref and dis at band position pos (of w x h), where this scale
// writes them (write_ll).
fn dwt_write_ll(pos: u32, w: u32, h: u32, ll_ref: i32, ll_dis: i32) {
  if (P.org.z != 0u) {
    ll_out[pos] = ll_ref;
    ll_out[w * h + pos] = ll_dis;
  }
}

// Whether band position (x, y) is in the grown rect, where decouple and CSF are stored.
fn dwt_in_grown(x: u32, y: u32) -> bool {
  return x >= P.grown.x && x < P.grown.y && y >= P.grown.z && y < P.grown.w;
}
