const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
const gpu = create([]);
const a = await gpu.requestAdapter();
const d = await a.requestDevice({requiredFeatures:['timestamp-query']});
const enc0 = d.createCommandEncoder();
console.log('writeTimestamp' in enc0, typeof enc0.writeTimestamp);
const b = d.createBuffer({size: 1<<20, usage: GPUBufferUsage.MAP_WRITE|GPUBufferUsage.COPY_SRC, mappedAtCreation: true});
const dst = d.createBuffer({size: 1<<20, usage: GPUBufferUsage.STORAGE|GPUBufferUsage.COPY_DST|GPUBufferUsage.COPY_SRC});
const rb = d.createBuffer({size: 1<<20, usage: GPUBufferUsage.MAP_READ|GPUBufferUsage.COPY_DST});
for (let i = 0; i < 5; i++) {
  if (b.mapState === 'mapped') { new Uint8Array(b.getMappedRange()).fill(i); b.unmap(); }
  const e = d.createCommandEncoder(); e.copyBufferToBuffer(b, 0, dst, 0, 1<<20); e.copyBufferToBuffer(dst, 0, rb, 0, 1<<20);
  d.queue.submit([e.finish()]);
  const t0 = performance.now();
  await Promise.all([b.mapAsync(GPUMapMode.WRITE), rb.mapAsync(GPUMapMode.READ)]);
  const t1 = performance.now();
  console.log('map latency', (t1-t0).toFixed(2), new Uint8Array(rb.getMappedRange())[5]);
  rb.unmap();
}
// destroy with pending map
b.unmap();
const e = d.createCommandEncoder(); e.copyBufferToBuffer(b, 0, dst, 0, 1<<20); e.copyBufferToBuffer(dst, 0, rb, 0, 1<<20);
d.queue.submit([e.finish()]);
const p1 = rb.mapAsync(GPUMapMode.READ).then(()=>'resolved', (err)=>'rejected: '+err.name+' '+err.message);
const p2 = d.queue.onSubmittedWorkDone().then(()=>'done', (err)=>'rej '+err);
d.destroy();
console.log(await p1, await p2);
const p3 = rb.mapAsync(GPUMapMode.READ).then(()=>'resolved', (err)=>'rejected: '+err.name+' '+err.message);
console.log('after destroy', await p3);
try { const e2 = d.createCommandEncoder(); d.queue.submit([e2.finish()]); console.log('submit ok after destroy'); } catch (err) { console.log('submit throws', err.message); }
const p4 = d.queue.onSubmittedWorkDone().then(()=>'done', (err)=>'rej '+err);
console.log('owd after destroy', await p4);
console.log((await d.lost).reason);
