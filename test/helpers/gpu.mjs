// Shared by the GPU kernel tests (gpu-lib, gpu-vif, gpu-adm): seeded random numbers and
// luma uploads. GPUBufferUsage is the global that dist/kernels/gpu/device.js installs.

/**
 * sfc32, seeded: every draw is one or more next() calls in a fixed order, so a seed
 * replays a run exactly. u32: 0 .. 2^32 - 1; float (alias unit): [0, 1); int(n): 0 .. n-1;
 * range(lo, hi): lo .. hi; bool; pick(arr); big(bits): a BigInt uniform in [0, 2^bits);
 * u64: a BigInt uniform in [0, 2^64).
 */
export function makeRng(seed) {
  let a = 0x9e3779b9, b = 0x243f6a88, c = 0xb7e15162, d = seed >>> 0;
  const next = () => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    const t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    const r = (t + d) | 0;
    c = (c + r) | 0;
    return r >>> 0;
  };
  for (let i = 0; i < 20; i++) next();
  const float = () => next() / 4294967296;
  return {
    u32: next,
    float,
    unit: float,
    int: (n) => Math.floor(float() * n), // 0 .. n-1
    range: (lo, hi) => lo + Math.floor(float() * (hi - lo + 1)), // lo .. hi
    bool: () => (next() & 1) === 1,
    pick: (arr) => arr[Math.floor(float() * arr.length)],
    big: (bits) => { // uniform in [0, 2^bits)
      let v = 0n;
      for (let i = 0; i < bits; i += 32) v = (v << 32n) | BigInt(next());
      return v & ((1n << BigInt(bits)) - 1n);
    },
    u64: () => (BigInt(next()) << 32n) | BigInt(next()),
  };
}

/**
 * A storage buffer holding a luma plane (Uint8Array or Uint16Array) as the kernels read
 * it, zero-padded to whole words (4 bytes at least).
 */
export function uploadPlane(gpu, plane, label = 'test luma') {
  const size = Math.max(4, Math.ceil(plane.byteLength / 4) * 4);
  const buffer = gpu.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label });
  const padded = new Uint8Array(size);
  padded.set(new Uint8Array(plane.buffer, plane.byteOffset, plane.byteLength));
  gpu.device.queue.writeBuffer(buffer, 0, padded);
  return buffer;
}
