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

/**
 * The bindings runItemKernel gives a kernel, and its item's index: WGSL for the top of a
 * test kernel.
 */
export const ITEM_KERNEL_PRELUDE = `
@group(0) @binding(0) var<storage, read> inp: array<u32>;
@group(0) @binding(1) var<storage, read_write> outp: array<u32>;
@group(0) @binding(2) var<uniform> params: vec4<u32>;
fn item_index(gid: vec3<u32>) -> u32 { return gid.x + gid.y * params.y; }`;

/**
 * Runs a one-invocation-per-item test kernel (the lib tests' shape: binding 0 the input words,
 * 1 the output words, 2 a vec4<u32> uniform of (n, invocations per row of workgroups), item
 * i = gid.x + gid.y * params.y, workgroups of 64) over n items, and returns its output:
 * outWords u32 words per item. Validation errors reject (the device's error scopes).
 */
export async function runItemKernel(gpu, pipeline, label, input, n, outWords) {
  const d = gpu.device;
  const inBuf = d.createBuffer({ size: input.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const outBuf = d.createBuffer({ size: n * outWords * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const params = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const groups = Math.ceil(n / 64);
  const gx = Math.min(groups, 32768);
  try {
    return await gpu.withErrorScopes(label, async () => {
      d.queue.writeBuffer(inBuf, 0, input);
      d.queue.writeBuffer(params, 0, new Uint32Array([n, gx * 64, 0, 0]));
      const enc = d.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, d.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: inBuf } }, { binding: 1, resource: { buffer: outBuf } }, { binding: 2, resource: { buffer: params } }],
      }));
      pass.dispatchWorkgroups(gx, Math.ceil(groups / gx));
      pass.end();
      d.queue.submit([enc.finish()]);
      return new Uint32Array(await gpu.read(outBuf));
    });
  } finally {
    inBuf.destroy();
    outBuf.destroy();
    params.destroy();
  }
}
