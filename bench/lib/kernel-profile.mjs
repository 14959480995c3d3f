// What the single-kernel GPU profilers (bench/adm-gpu-profile.mjs, bench/vif-gpu-profile.mjs)
// share: their command line, the device, and their measurements of a kernel on two planes
// already on the GPU: per-dispatch GPU time (timestamp queries, where the adapter has them)
// and back-to-back throughput. A kernel here is a FrameKernel with encodeProfiled.
import { openGpuDevice } from '../../dist/kernels/gpu/device.js';

/** Takes `name value` out of args and returns the value; `def` when name is not there. */
export function takeOption(args, name, def) {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
}

/** Takes `name` out of args; whether it was there. */
export function takeFlag(args, name) {
  const i = args.indexOf(name);
  if (i >= 0) args.splice(i, 1);
  return i >= 0;
}

/** The WxHxB arguments (what is left once the options are taken out; default 1920x1080x8). */
export function geometriesOf(args) {
  return (args.length ? args : ['1920x1080x8']).map((g) => {
    const [width, height, bitDepth] = g.split('x').map(Number);
    return { width, height, bitDepth };
  });
}

/**
 * Opens the device (on the adapter named, if any) and prints the adapter line, `note`
 * appended. close() destroys the device and lets the process end: until then a timer
 * keeps it alive.
 */
export async function openProfileDevice(label, adapter, note = '') {
  const keepAlive = setInterval(() => {}, 1000);
  const gpu = await openGpuDevice({ label, ...(adapter ? { adapter } : {}) });
  const timestamps = gpu.features.has('timestamp-query');
  console.log(`adapter: ${gpu.adapterName}${gpu.isSoftware ? ' (software)' : ''}; timestamps: ${timestamps ? 'yes' : 'no'}${note}`);
  return {
    gpu,
    timestamps,
    close() {
      gpu.destroy();
      clearInterval(keepAlive);
    },
  };
}

/** Three frames, one command buffer each, waited for: compiles and warms up. */
export async function warmUp(gpu, kernel, planes, out) {
  const d = gpu.device;
  for (let i = 0; i < 3; i++) {
    const enc = d.createCommandEncoder();
    kernel.encode(enc, planes, { buffer: out, offset: 0 });
    d.queue.submit([enc.finish()]);
  }
  await d.queue.onSubmittedWorkDone();
}

/**
 * Prints the GPU time of each of the kernel's dispatches (encodeProfiled, at most 6), the
 * mean over min(frames, 50) frames, and their sum. Needs timestamp queries.
 */
export async function printDispatchTimes(gpu, kernel, planes, out, frames, label) {
  const d = gpu.device;
  const qs = d.createQuerySet({ type: 'timestamp', count: 12 });
  const resolve = d.createBuffer({ size: 96, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const reps = Math.min(frames, 50);
  let names = [];
  const sum = new Array(6).fill(0);
  for (let r = 0; r < reps; r++) {
    const enc = d.createCommandEncoder();
    names = kernel.encodeProfiled(enc, planes, { buffer: out, offset: 0 }, qs, 0);
    enc.resolveQuerySet(qs, 0, 2 * names.length, resolve, 0);
    d.queue.submit([enc.finish()]);
    const t = new BigUint64Array(await gpu.read(resolve, 16 * names.length));
    for (let i = 0; i < names.length; i++) sum[i] += Number(t[2 * i + 1] - t[2 * i]) / 1000;
  }
  const parts = names.map((n, i) => `${n} ${(sum[i] / reps).toFixed(1)}`);
  const total = sum.reduce((a, b) => a + b, 0) / reps;
  console.log(`${label}: per dispatch (us, one pass each): ${parts.join(', ')}; sum ${total.toFixed(1)} us`);
  qs.destroy();
  resolve.destroy();
}

/**
 * Throughput: `frames` frames encoded back to back, `slots` per command buffer (frame i of
 * a command buffer into the stats slot at i * slotBytes of out), timed from the first
 * submit to onSubmittedWorkDone. Prints fps and us/frame, then the kernel's creation time
 * (createMs) and `note`.
 */
export async function printThroughput(gpu, kernel, planes, out, { frames, slots, slotBytes, label, createMs, note = '' }) {
  const d = gpu.device;
  const t1 = performance.now();
  for (let f = 0; f < frames; f += slots) {
    const enc = d.createCommandEncoder();
    for (let i = 0; i < slots && f + i < frames; i++) kernel.encode(enc, planes, { buffer: out, offset: slotBytes * i });
    d.queue.submit([enc.finish()]);
  }
  await d.queue.onSubmittedWorkDone();
  const ms = performance.now() - t1;
  console.log(`${label}: ${frames} frames in ${ms.toFixed(1)} ms: ${(frames / (ms / 1000)).toFixed(0)} fps (${((ms * 1000) / frames).toFixed(1)} us/frame); kernel create ${createMs.toFixed(0)} ms${note}`);
}
