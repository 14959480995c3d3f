// How a luma plane lies in a GPU storage buffer (array<u32>), as the upload path writes it:
// the frame's samples row-major with stride == width, exactly the host's bytes. At 8 bits
// sample i is byte (i & 3) of word i >> 2; above 8 bits, sample i is the little-endian u16
// (i & 1) of word i >> 1. The buffer is padded to a whole number of words.

fn luma_sample_8(words: ptr<storage, array<u32>, read>, i: u32) -> u32 {
  return ((*words)[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn luma_sample_16(words: ptr<storage, array<u32>, read>, i: u32) -> u32 {
  return ((*words)[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
}
