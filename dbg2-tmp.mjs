import { create, globals } from 'webgpu';
Object.assign(globalThis, globals);
const keep = [];
if (process.argv.includes('two')) {
  const g0 = create(['adapter=zzz']); keep.push(g0);
  try { await g0.requestAdapter(); } catch (e) { console.log('listed'); }
  if (process.argv.includes('drop')) { keep.length = 0; }
  if (process.argv.includes('gc')) { keep.length = 0; globalThis.gc?.(); }
}
const g = create(process.argv.includes('named') ? ['adapter=llvmpipe (LLVM 15.0.6, 256 bits)'] : []);
const a = await g.requestAdapter();
const d = await a.requestDevice();
const code = `@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { o[g.x] = g.x * 3u; }`;
const m = d.createShaderModule({ code });
const p = d.createComputePipeline({ layout: "auto", compute: { module: m, entryPoint: "main" } });
const n = 1 << 16;
const outBuf = d.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const st = d.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
const enc = d.createCommandEncoder();
const pass = enc.beginComputePass(); pass.setPipeline(p);
pass.setBindGroup(0, d.createBindGroup({ layout: p.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: outBuf } }] }));
pass.dispatchWorkgroups(n / 64); pass.end();
enc.copyBufferToBuffer(outBuf, 0, st, 0, n * 4);
d.queue.submit([enc.finish()]);
await st.mapAsync(GPUMapMode.READ);
console.log('read', new Uint32Array(st.getMappedRange())[5]);
