#!/usr/bin/env node
// Where a registered extractor's GPU work goes: the GPU time of each of its dispatches, on the
// frames of a y4m pair (8-bit or more, any chroma layout), with timestamp queries. Any gpu part
// is profiled without changes to it: its encoder is wrapped so that every dispatch it records
// runs in a compute pass of its own, between two timestamps (one pass per dispatch adds a
// little time of its own, so the sum is an upper bound). Build first (npm run build).
//
//   node bench/dispatch-profile.mjs ref.y4m dis.y4m --feature float_ms_ssim [--feature psnr_hvs ...] [--frames 20]
//   node bench/dispatch-profile.mjs ref.y4m dis.y4m --core adm --core adm-no-egl1
//
// --core profiles a kernel of the fused core the same way: adm (integer ADM at the core's
// options, both gain-limit variants: a run with a NEG model) or adm-no-egl1 (the default
// variant alone: every other run).
//
// Prints, per extractor, the dispatches grouped by pipeline label: count per frame, mean GPU
// microseconds per frame, share; and the total.
import { openSync, readSync, fstatSync } from 'node:fs';
import '../dist/index.js'; // the extractor registry first (the gpu parts import their definitions)
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { pictureLayout } from '../dist/kernels/gpu/picture-planes.js';
import { I64Reducer } from '../dist/kernels/gpu/reduce-i64.js';
import { parseFeatureArg } from '../dist/extractors/request.js';
import { AdmKernel } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { takeOption } from './lib/kernel-profile.mjs';

const args = process.argv.slice(2);
const frames = Number(takeOption(args, '--frames', 20));
const features = [];
for (let f; (f = takeOption(args, '--feature', undefined)) !== undefined; ) features.push(f);
const cores = [];
for (let c; (c = takeOption(args, '--core', undefined)) !== undefined; ) cores.push(c);
const CORE_KERNELS = {
  adm: (gpu, g) => AdmKernel.create(gpu, g),
  'adm-no-egl1': (gpu, g) => AdmKernel.createWithoutEgl1(gpu, g),
};
const [refPath, disPath] = args;
if (!refPath || !disPath || features.length + cores.length === 0 || cores.some((c) => !(c in CORE_KERNELS))) {
  console.error(`usage: node bench/dispatch-profile.mjs ref.y4m dis.y4m [--feature NAME[=opt=v] ...] [--core ${Object.keys(CORE_KERNELS).join('|')} ...] [--frames N]`);
  process.exit(2);
}

/** A y4m file's format and its frames' planes (the bytes after each FRAME line). */
function y4m(path) {
  const fd = openSync(path, 'r');
  const head = Buffer.alloc(512);
  readSync(fd, head, 0, head.length, 0);
  const nl = head.indexOf(10);
  const header = head.subarray(0, nl).toString('latin1');
  const width = Number(/ W(\d+)/.exec(header)[1]);
  const height = Number(/ H(\d+)/.exec(header)[1]);
  const c = / C(\S+)/.exec(header)?.[1] ?? '420';
  const bitDepth = /p(\d+)/.test(c) ? Number(/p(\d+)/.exec(c)[1]) : 8;
  const chroma = c.startsWith('444') ? '444' : c.startsWith('422') ? '422' : '420';
  const sample = bitDepth > 8 ? 2 : 1;
  const cw = chroma === '444' ? width : Math.ceil(width / 2);
  const ch = chroma === '420' ? Math.ceil(height / 2) : height;
  const planeBytes = [width * height * sample, cw * ch * sample, cw * ch * sample];
  const frameBytes = 6 + planeBytes[0] + 2 * planeBytes[1];
  const count = Math.floor((fstatSync(fd).size - nl - 1) / frameBytes);
  const planes = (k) => {
    const all = new Uint8Array(frameBytes - 6);
    readSync(fd, all, 0, all.length, nl + 1 + k * frameBytes + 6);
    return [all.subarray(0, planeBytes[0]), all.subarray(planeBytes[0], planeBytes[0] + planeBytes[1]), all.subarray(planeBytes[0] + planeBytes[1])];
  };
  return { format: { width, height, bitDepth, chroma }, count, planes };
}

/**
 * An encoder whose compute passes record each dispatch in a pass of its own between
 * timestamps `stamps.next` and the one after; `stamps.labels` gets each dispatch's pipeline label.
 */
function timedEncoder(encoder, querySet, stamps) {
  const pass = () => {
    let pipeline;
    const groups = new Map();
    const run = (dispatch) => {
      const i = stamps.labels.length;
      stamps.labels.push(pipeline.label || '(unlabelled)');
      const p = encoder.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } });
      p.setPipeline(pipeline);
      for (const [index, g] of groups) p.setBindGroup(index, ...g);
      dispatch(p);
      p.end();
    };
    return {
      setPipeline: (p) => void (pipeline = p),
      setBindGroup: (index, ...rest) => void groups.set(index, rest),
      dispatchWorkgroups: (...xyz) => run((p) => p.dispatchWorkgroups(...xyz)),
      dispatchWorkgroupsIndirect: (...a) => run((p) => p.dispatchWorkgroupsIndirect(...a)),
      pushDebugGroup() {},
      popDebugGroup() {},
      insertDebugMarker() {},
      end() {},
    };
  };
  return new Proxy(encoder, {
    get(target, key) {
      if (key === 'beginComputePass') return pass;
      const v = target[key];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const ref = y4m(refPath);
const dis = y4m(disPath);
const n = Math.min(frames, ref.count, dis.count);
const gpu = await openGpuDevice({ label: 'dispatch profile', timing: true });
if (!gpu.features.has('timestamp-query')) {
  console.error(`${gpu.adapterName}: no timestamp queries`);
  process.exit(1);
}
const d = gpu.device;
const format = ref.format;
console.log(`adapter: ${gpu.adapterName}; ${format.width}x${format.height} ${format.bitDepth}-bit ${format.chroma}, ${n} frames`);
const layout = pictureLayout(format, true);
const reducer = await I64Reducer.create(gpu);
const upload = (planes) => {
  const buffer = d.createBuffer({ size: layout.bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  planes.forEach((p, i) => {
    const padded = new Uint8Array(Math.ceil(p.length / 4) * 4);
    padded.set(p);
    d.queue.writeBuffer(buffer, layout.planes[i].offset, padded);
  });
  return { buffer, layout };
};
const pictures = Array.from({ length: n }, (_, k) => ({ ref: upload(ref.planes(k)), dis: upload(dis.planes(k)) }));
const out = d.createBuffer({ size: 1 << 24, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
const querySet = d.createQuerySet({ type: 'timestamp', count: 4096 });
const resolve = d.createBuffer({ size: 4096 * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });

for (const text of features) {
  const { definition, options } = parseFeatureArg(text);
  const impl = definition.forOptions?.(options).implementation ?? definition.implementation;
  if (impl.kind !== 'native' || !impl.gpu) {
    console.log(`${text}: no gpu part${impl.kind === 'core' ? ' (the fused core computes it: see --core)' : ''}`);
    continue;
  }
  const part = await impl.gpu(); // gpu parts are loaded on demand (ExtractorImplementation.gpu)
  if (!part.supports(options, format, gpu.limits)) {
    console.log(`${text}: its gpu part does not take this input`);
    continue;
  }
  const kernel = await part.create({ gpu, options, format, layout, reducer });
  const inputs = (k) => (k > 0 ? { ref: pictures[k].ref, dis: pictures[k].dis, previousRef: pictures[k - 1].ref, previousDis: pictures[k - 1].dis } : { ref: pictures[k].ref, dis: pictures[k].dis });
  await profile(text, kernel, inputs);
}
// The core's kernels read the luma planes, which lie at the start of each picture buffer.
for (const name of cores) {
  const kernel = await CORE_KERNELS[name](gpu, { width: format.width, height: format.height, bitDepth: format.bitDepth });
  await profile(`core ${name}`, kernel, (k) => ({ ref: pictures[k].ref.buffer, dis: pictures[k].dis.buffer }));
}
reducer.destroy();
gpu.destroy();
process.exit(0);

/** Warms `kernel` up, then prints its GPU time per frame by pipeline over the n frames; destroys it. */
async function profile(text, kernel, inputs) {
  // Warm-up: compiles, first-use allocations, and up to half a second of back-to-back frames,
  // so that an idle GPU's clocks have come up (on the H100 the first profile of a lease read
  // up to 4x high with three frames of warm-up). At most 40: a kernel that keeps per-frame
  // state until finish() (cambi: 64 frames) is never finished here.
  const warmUntil = performance.now() + 500;
  for (let k = 0; k < 3 || (k < 40 && performance.now() < warmUntil); k++) {
    const enc = d.createCommandEncoder();
    kernel.encode(enc, inputs(k % n), { buffer: out, offset: 0 });
    d.queue.submit([enc.finish()]);
    if (k % 4 === 3) await d.queue.onSubmittedWorkDone();
  }
  await d.queue.onSubmittedWorkDone();
  const byLabel = new Map();
  let wall = 0;
  for (let k = 0; k < n; k++) {
    const stamps = { labels: [] };
    const enc = d.createCommandEncoder();
    kernel.encode(timedEncoder(enc, querySet, stamps), inputs(k), { buffer: out, offset: 0 });
    const count = stamps.labels.length;
    if (2 * count > 4096) throw new Error(`${text}: ${count} dispatches a frame: more than this profiler's 2048`);
    enc.resolveQuerySet(querySet, 0, 2 * count, resolve, 0);
    const t0 = performance.now();
    d.queue.submit([enc.finish()]);
    const t = new BigUint64Array(await gpu.read(resolve, 16 * count));
    wall += performance.now() - t0;
    stamps.labels.forEach((label, i) => {
      const e = byLabel.get(label) ?? { us: 0, dispatches: 0 };
      e.us += Number(t[2 * i + 1] - t[2 * i]) / 1000;
      e.dispatches++;
      byLabel.set(label, e);
    });
  }
  kernel.destroy();
  const rows = [...byLabel].sort((a, b) => b[1].us - a[1].us);
  const total = rows.reduce((s, [, e]) => s + e.us, 0);
  console.log(`\n${text}: ${(total / n).toFixed(0)} us GPU a frame (sum of its dispatches), ${(wall / n).toFixed(2)} ms submit-to-readback`);
  console.log('| pipeline | dispatches/frame | us/frame | share |\n|---|--:|--:|--:|');
  for (const [label, e] of rows) console.log(`| ${label} | ${(e.dispatches / n).toFixed(0)} | ${(e.us / n).toFixed(1)} | ${((100 * e.us) / total).toFixed(1)}% |`);
}
