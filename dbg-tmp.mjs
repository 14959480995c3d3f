import { openGpuDevice } from './dist/kernels/gpu/device.js';
import { composeWgsl } from './dist/kernels/gpu/wgsl.js';
const log = (...a) => console.log(...a);
const gpu = await openGpuDevice();
log('opened');
const code = composeWgsl(['lib/i64.wgsl'], `
@group(0) @binding(0) var<storage, read> inp: array<u32>;
@group(0) @binding(1) var<storage, read_write> outp: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  let a = vec2<u32>(inp[4u*i], inp[4u*i+1u]); let b = vec2<u32>(inp[4u*i+2u], inp[4u*i+3u]);
  let r = i64_add(a, b);
  outp[2u*i] = r.x; outp[2u*i+1u] = r.y;
}`);
const d = gpu.device;
let pipeline;
if (process.argv.includes('raw')) pipeline = d.createComputePipeline({ layout: 'auto', compute: { module: d.createShaderModule({ code }), entryPoint: 'main' } });
else pipeline = await gpu.createComputePipeline(code, { label: 'x' });
log('pipeline');
const n = 1 << 16;
const inBuf = d.createBuffer({ size: n * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
const outBuf = d.createBuffer({ size: n * 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
d.queue.writeBuffer(inBuf, 0, new Uint32Array(n * 4).fill(7));
const enc = d.createCommandEncoder();
const pass = enc.beginComputePass();
pass.setPipeline(pipeline);
pass.setBindGroup(0, d.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: inBuf } }, { binding: 1, resource: { buffer: outBuf } }] }));
pass.dispatchWorkgroups(n / 64);
pass.end();
d.queue.submit([enc.finish()]);
log('submitted');
const out = new Uint32Array(await gpu.read(outBuf));
log('read', out[0], out[1]);
