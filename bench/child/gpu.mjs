// The gpu suite's measurements, each in its own process (bench/suites/gpu.mjs runs them):
//   node bench/child/gpu.mjs <mode> '<json>'
// Prints one JSON line on stdout (the last line); progress and warnings go to stderr.
//
//   probe    the WebGPU adapters Dawn sees and the one the suite would use
//   compute  the VIF + ADM + motion kernels alone, on frame pairs resident in GPU buffers
//   extract  GpuBackend.extract fed from frame pairs in host memory, + model prediction
//   score    score() end to end (as child/score.mjs), with the time of each result
//   latency  a backend's extract() fed pair by pair from two y4m files, each pair's entry
//            and result stamped
//
// Times are performance.now() (ms, monotonic) in this process, and GPU timestamps (ns)
// from timestamp queries where the adapter has 'timestamp-query'.
import { resourceUsage } from 'node:process';

const started = performance.now();
const [mode, payload = '{}'] = process.argv.slice(2);
const args = JSON.parse(payload);
const dist = (p) => new URL(`../../dist/${p}`, import.meta.url).href;
const log = (m) => process.stderr.write(`gpu bench: ${m}\n`);
const now = () => performance.now();

// A hung GPU must not hang the bench: the child ends itself past its time limit.
if (args.timeoutS) {
  setTimeout(() => {
    log(`${mode}: no result in ${args.timeoutS} s; giving up`);
    process.exit(124);
  }, args.timeoutS * 1000).unref();
}

const pad4 = (n) => Math.max(4, Math.ceil(n / 4) * 4);
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/** Nearest-rank percentiles and the mean of a list of numbers (ms). */
function summary(xs) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
  return { n: s.length, mean: mean(s), min: s[0], p50: q(0.5), p90: q(0.9), p99: q(0.99), max: s.at(-1) };
}

/** The first `count` pairs of two y4m files, luma copied into host memory. */
async function loadPairs(refPath, disPath, count) {
  const { openFrameSource } = await import(dist('index.js'));
  const read = async (path) => {
    const source = openFrameSource(path, { poolSlots: 4 });
    const frames = [];
    try {
      for await (const f of source) {
        const n = f.format.width * f.format.height;
        frames.push({ luma: f.luma.slice(0, n), format: { ...f.format } });
        f.release();
        if (frames.length >= count) break;
      }
    } finally {
      await source.close();
    }
    return frames;
  };
  const [ref, dis] = await Promise.all([read(refPath), read(disPath)]);
  const n = Math.min(ref.length, dis.length);
  if (n < 2) throw new Error(`need at least 2 frame pairs, ${refPath} and ${disPath} have ${n}`);
  return Array.from({ length: n }, (_, i) => ({ ref: ref[i], dis: dis[i] }));
}

function finish(result) {
  const usage = resourceUsage();
  process.stdout.write(
    `${JSON.stringify({
      ...result,
      childS: (now() - started) / 1000,
      maxRssKiB: usage.maxRSS,
      cpuS: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
    })}\n`,
  );
  // Dawn's instance may keep handles open; the result is out.
  process.exit(0);
}

// ---- probe -------------------------------------------------------------------------------

async function probe() {
  const { listGpuAdapters, openGpuDevice } = await import(dist('kernels/gpu/device.js'));
  const adapters = await listGpuAdapters();
  const chosen = adapters.find((a) => !a.isSoftware) ?? (args.software ? adapters.find((a) => a.isSoftware) : undefined);
  if (!chosen) return { adapters, chosen: null };
  const gpu = await openGpuDevice({ adapter: chosen.name });
  const limits = {};
  for (const k of ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup']) limits[k] = gpu.limits[k];
  const out = { adapters, chosen, isSoftware: gpu.isSoftware, info: gpu.adapterInfo, features: [...gpu.features], limits };
  gpu.destroy();
  return out;
}

// ---- compute -----------------------------------------------------------------------------

// Timestamps. An empty pass's beginning-of-pass timestamp (the gpu backend's stage markers)
// may, depending on the pipeline stage the implementation latches it at, be written before
// the dispatches recorded ahead of it have finished. So each timestamp here is the END of a
// one-invocation pass that rewrites a word of the stats buffer the previous kernel wrote:
// WebGPU orders that write after the kernel's (a barrier), so the time is taken after it.
const FENCE_WGSL = `
@group(0) @binding(0) var<storage, read_write> words: array<u32>;
@compute @workgroup_size(1) fn main() { words[0] = words[0]; }
`;

async function compute() {
  const { batch = 8, ring: ringSize = 8, warmup = 16, warmupMinMs = 0, maxRunS = 0, breakdown = 64, dispatchProfile = 16 } = args;
  let N = args.frames;
  const [{ openGpuDevice }, { VifKernel }, { AdmKernel }, { MotionKernel }, { loadNative }] = await Promise.all([
    import(dist('kernels/gpu/device.js')),
    import(dist('kernels/gpu/vif/vif-kernel.js')),
    import(dist('kernels/gpu/adm/adm-kernel.js')),
    import(dist('kernels/gpu/motion/motion-kernel.js')),
    import(dist('kernels/native.js')),
  ]);
  const keepAlive = setInterval(() => {}, 1000); // GPU promises alone do not keep Node running
  const pairs = await loadPairs(args.ref, args.dis, ringSize);
  const K = pairs.length;
  const { width, height, bitDepth } = pairs[0].ref.format;
  const geometry = { width, height, bitDepth };

  let t = now();
  // Dawn rounds timestamps to 100 us unless told otherwise (as GpuBackend.open({ timing })).
  const gpu = await openGpuDevice({ adapter: args.adapter, dawnFlags: ['disable-dawn-features=timestamp_quantization'], label: 'bench compute' });
  const openMs = now() - t;
  const d = gpu.device;
  const timestamps = gpu.features.has('timestamp-query');
  log(`compute ${width}x${height}: ${gpu.adapterName}; ${K} resident pairs, ${N} frames; timestamps ${timestamps ? 'yes' : 'no'}`);

  // The pairs, uploaded once; stats slot k holds ring frame k's accumulators (the backend's layout).
  const lumaBytes = pad4(width * height * (bitDepth > 8 ? 2 : 1));
  const upload = (label, luma) => {
    const b = d.createBuffer({ size: lumaBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC, label });
    const bytes = new Uint8Array(lumaBytes);
    bytes.set(new Uint8Array(luma.buffer, luma.byteOffset, luma.byteLength));
    d.queue.writeBuffer(b, 0, bytes);
    return b;
  };
  const refBufs = pairs.map((p, i) => upload(`ref ${i}`, p.ref.luma));
  const disBufs = pairs.map((p, i) => upload(`dis ${i}`, p.dis.luma));

  t = now();
  const [vif, adm, motion] = await Promise.all([VifKernel.create(gpu, geometry), AdmKernel.create(gpu, geometry), MotionKernel.create(gpu, geometry)]);
  const createMs = now() - t;
  const native = loadNative();
  const layout = native.statsLayout();
  if (vif.statsLength !== layout.vif || adm.statsLength !== layout.adm) throw new Error(`kernels write ${vif.statsLength}/${adm.statsLength} values, the native finish step takes ${layout.vif}/${layout.adm}`);
  const L = { vif: 0, adm: layout.vif * 8, motion: (layout.vif + layout.adm) * 8, bytes: (layout.vif + layout.adm + 1) * 8 };
  const statsBufs = pairs.map((_, i) =>
    d.createBuffer({ size: L.bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC, label: `stats ${i}` }));
  const fence = timestamps ? await gpu.createComputePipeline(FENCE_WGSL, { label: 'timestamp fence' }) : undefined;
  const fenceGroups = fence ? statsBufs.map((buffer) => d.createBindGroup({ layout: fence.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] })) : [];
  /** A timestamp after everything before it that wrote stats slot k (see FENCE_WGSL). */
  const stamp = (enc, querySet, index, k) => {
    const pass = enc.beginComputePass({ label: `timestamp ${index}`, timestampWrites: { querySet, endOfPassWriteIndex: index } });
    pass.setPipeline(fence);
    pass.setBindGroup(0, fenceGroups[((k % K) + K) % K]);
    pass.dispatchWorkgroups(1);
    pass.end();
  };

  /** Frame i: ring pair i % K against the previous ring pair's reference (motion), as the backend encodes it. */
  const planesOf = (i) => {
    const k = i % K;
    return { k, planes: { ref: refBufs[k], dis: disBufs[k], prevRef: refBufs[(k + K - 1) % K] } };
  };
  const encodeFrame = (enc, i, mark) => {
    const { k, planes } = planesOf(i);
    vif.encode(enc, planes, { buffer: statsBufs[k], offset: L.vif });
    mark?.(1);
    adm.encode(enc, planes, { buffer: statsBufs[k], offset: L.adm });
    mark?.(2);
    motion.encode(enc, planes, { buffer: statsBufs[k], offset: L.motion });
    mark?.(3);
  };
  const readTimestamps = async (querySet, count) => {
    const resolve = d.createBuffer({ size: count * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'timestamps' });
    const enc = d.createCommandEncoder();
    enc.resolveQuerySet(querySet, 0, count, resolve, 0);
    d.queue.submit([enc.finish()]);
    const ts = new BigUint64Array(await gpu.read(resolve, count * 8));
    resolve.destroy();
    return ts;
  };
  const ms = (a, b) => Number(b - a) / 1e6;

  // Warm-up: pipelines, bind groups, and the GPU's clocks (batches of `warmup` frames until
  // warmupMinMs have passed). The last batch's time per frame estimates the runs' length.
  t = now();
  let warmed = 0;
  let lastBatchMs;
  do {
    const tb = now();
    for (let i = 0; i < warmup; i++) {
      const enc = d.createCommandEncoder();
      encodeFrame(enc, warmed + i);
      d.queue.submit([enc.finish()]);
    }
    await gpu.guard(d.queue.onSubmittedWorkDone(), 'warm-up');
    warmed += warmup;
    lastBatchMs = now() - tb;
  } while (now() - t < warmupMinMs);
  const warmupMs = now() - t;
  gpu.throwIfFailed();

  const result = {
    adapter: gpu.adapterName, software: gpu.isSoftware, timestamps, width, height, bitDepth, ring: K, frames: N,
    openMs, createMs, warmup: warmed, warmupMs,
  };
  // A very slow adapter must not eat the bench's time: each run is kept under maxRunS.
  const estMs = lastBatchMs / warmup;
  if (maxRunS > 0 && estMs * N > maxRunS * 1000) {
    const fewer = Math.max(8, Math.floor((maxRunS * 1000) / estMs));
    if (fewer < N) {
      log(`compute ${width}x${height}: about ${estMs.toFixed(2)} ms a frame: ${fewer} frames per run instead of ${N}`);
      result.framesReduced = { from: N, to: fewer, estMsPerFrame: estMs };
      result.frames = N = fewer;
    }
  }

  // 1. GPU time: N frames, `batch` per command buffer, a timestamp before and after each
  //    command buffer's frames; every command buffer encoded first, then one submit, so
  //    the GPU runs them back to back. GPU ms per frame = sum of the batches' spans / N.
  if (timestamps) {
    const B = Math.max(batch, Math.ceil(N / 2000)); // a query set holds at most 4096
    const nb = Math.ceil(N / B);
    const qs = d.createQuerySet({ type: 'timestamp', count: 2 * nb, label: 'compute batches' });
    t = now();
    const cbs = [];
    for (let b = 0; b < nb; b++) {
      const enc = d.createCommandEncoder({ label: `batch ${b}` });
      const first = b * B;
      const end = Math.min(N, (b + 1) * B);
      stamp(enc, qs, 2 * b, first - 1); // after the previous frame
      for (let i = first; i < end; i++) encodeFrame(enc, i);
      stamp(enc, qs, 2 * b + 1, end - 1); // after this command buffer's last frame
      cbs.push(enc.finish());
    }
    const encodeMs = now() - t;
    t = now();
    d.queue.submit(cbs);
    await gpu.guard(d.queue.onSubmittedWorkDone(), 'timed frames');
    const wallMs = now() - t;
    gpu.throwIfFailed();
    const ts = await readTimestamps(qs, 2 * nb);
    qs.destroy();
    const perFrame = [];
    let sum = 0;
    let bad = 0;
    for (let b = 0; b < nb; b++) {
      const n = Math.min(N, (b + 1) * B) - b * B;
      if (!(ts[2 * b] > 0n && ts[2 * b + 1] >= ts[2 * b])) {
        bad++;
        continue;
      }
      const span = ms(ts[2 * b], ts[2 * b + 1]);
      sum += span;
      perFrame.push(span / n);
    }
    const measured = N - bad * B;
    const gpuMsPerFrame = sum / Math.max(1, measured);
    const spanMs = ms(ts[0], ts[2 * nb - 1]);
    result.gpu = {
      batch: B, commandBuffers: nb, invalidBatches: bad, msPerFrame: gpuMsPerFrame, fps: 1000 / gpuMsPerFrame,
      batchMsPerFrame: summary(perFrame),
      // first timestamp to last: includes the GPU's gaps between command buffers
      spanMs, spanFps: (N * 1000) / spanMs,
      // host: encoding all command buffers; submit to onSubmittedWorkDone
      encodeMs, submitToDoneMs: wallMs, submitToDoneFps: (N * 1000) / wallMs,
    };
  }

  // 2. Wall clock, as the backend submits: one command buffer per frame, encoded and
  //    submitted back to back, from the first encode to onSubmittedWorkDone.
  {
    t = now();
    for (let i = 0; i < N; i++) {
      const enc = d.createCommandEncoder();
      encodeFrame(enc, i);
      d.queue.submit([enc.finish()]);
    }
    const hostMs = now() - t;
    await gpu.guard(d.queue.onSubmittedWorkDone(), 'wall-clock frames');
    const wallMs = now() - t;
    gpu.throwIfFailed();
    result.wall = { msPerFrame: wallMs / N, fps: (N * 1000) / wallMs, wallMs, hostEncodeSubmitMs: hostMs };
  }

  // 3. Per kernel: timestamps between VIF, ADM and motion of each frame (`breakdown` frames).
  if (timestamps && breakdown > 0) {
    const M = Math.min(N, breakdown);
    const qs = d.createQuerySet({ type: 'timestamp', count: 4 * M, label: 'per kernel' });
    const cbs = [];
    for (let b = 0; b < M; b += batch) {
      const enc = d.createCommandEncoder();
      for (let i = b; i < Math.min(M, b + batch); i++) {
        stamp(enc, qs, 4 * i, i - 1);
        encodeFrame(enc, i, (j) => stamp(enc, qs, 4 * i + j, i));
      }
      cbs.push(enc.finish());
    }
    d.queue.submit(cbs);
    await gpu.guard(d.queue.onSubmittedWorkDone(), 'per-kernel frames');
    const ts = await readTimestamps(qs, 4 * M);
    qs.destroy();
    const parts = { vif: [], adm: [], motion: [] };
    for (let i = 0; i < M; i++) {
      parts.vif.push(ms(ts[4 * i], ts[4 * i + 1]));
      parts.adm.push(ms(ts[4 * i + 1], ts[4 * i + 2]));
      parts.motion.push(ms(ts[4 * i + 2], ts[4 * i + 3]));
    }
    result.perKernel = { frames: M, vif: mean(parts.vif), adm: mean(parts.adm), motion: mean(parts.motion) };
    result.perKernel.total = result.perKernel.vif + result.perKernel.adm + result.perKernel.motion;
  }

  // 4. Per dispatch (each dispatch in its own timed pass; kernels that offer encodeProfiled).
  if (timestamps && dispatchProfile > 0 && typeof vif.encodeProfiled === 'function' && typeof adm.encodeProfiled === 'function') {
    const M = Math.min(N, dispatchProfile);
    const qs = d.createQuerySet({ type: 'timestamp', count: 24, label: 'per dispatch' });
    const sums = new Map();
    for (let i = 0; i < M; i++) {
      const { k, planes } = planesOf(i);
      const enc = d.createCommandEncoder();
      const v = vif.encodeProfiled(enc, planes, { buffer: statsBufs[k], offset: L.vif }, qs, 0);
      const a = adm.encodeProfiled(enc, planes, { buffer: statsBufs[k], offset: L.adm }, qs, 2 * v.length);
      motion.encode(enc, planes, { buffer: statsBufs[k], offset: L.motion });
      d.queue.submit([enc.finish()]);
      const ts = await readTimestamps(qs, 2 * (v.length + a.length));
      [...v.map((l) => `vif ${l}`), ...a.map((l) => `adm ${l}`)].forEach((label, j) => {
        sums.set(label, (sums.get(label) ?? 0) + ms(ts[2 * j], ts[2 * j + 1]));
      });
    }
    qs.destroy();
    result.perDispatch = { frames: M, ms: Object.fromEntries([...sums].map(([l, s]) => [l, s / M])) };
  }

  // 5. Check: ring frame 1's accumulators (VIF, ADM, motion SAD against ring frame 0)
  //    against the cpu backend's native code.
  {
    const k = 1;
    const words = new BigInt64Array(await gpu.read(statsBufs[k], L.bytes));
    const cpu = await native.computeFrameStats(pairs[k].ref.luma, pairs[k].dis.luma, width, height, bitDepth, pairs[k - 1].ref.luma);
    let mismatches = 0;
    for (let j = 0; j < cpu.stats.length; j++) if (cpu.stats[j] !== words[j]) mismatches++;
    const sadOk = cpu.sad === words[layout.vif + layout.adm];
    result.check = { frame: k, values: cpu.stats.length + 1, mismatches: mismatches + (sadOk ? 0 : 1), exact: mismatches === 0 && sadOk };
  }

  for (const b of [...refBufs, ...disBufs, ...statsBufs]) b.destroy();
  vif.destroy();
  adm.destroy();
  motion.destroy();
  gpu.destroy();
  clearInterval(keepAlive);
  return result;
}

// ---- extract (from host memory) -----------------------------------------------------------

async function extract() {
  const { frames: N, ring: ringSize = 8, warmup = 16, depths = [], timing = true } = args;
  const [{ GpuBackend }, lib, { Observable, map }] = await Promise.all([import(dist('kernels/gpu/gpu-backend.js')), import(dist('index.js')), import('rxjs')]);
  const pairs = await loadPairs(args.ref, args.dis, ringSize);
  const K = pairs.length;
  const { width, height } = pairs[0].ref.format;
  const model = await lib.loadModel(lib.parseModelSpec('version=vmaf_v0.6.1:name=vmaf'));

  // n pairs cycling through the ring, all offered at once: the backend takes `depth` at a time.
  // The frames' memory is the ring's; release() has nothing to give back.
  const source = (n) =>
    new Observable((sub) => {
      for (let i = 0; i < n && !sub.closed; i++) {
        const p = pairs[i % K];
        const frame = (f) => ({ index: i, format: f.format, luma: f.luma, pts: i / 24, release() {} });
        sub.next({ index: i, ref: frame(p.ref), dis: frame(p.dis) });
      }
      sub.complete();
    });
  const run = (backend, n) =>
    new Promise((resolve, reject) => {
      const scores = [];
      const t0 = now();
      backend
        .extract(source(n))
        .pipe(map((f) => model.predict(f.features)))
        .subscribe({
          next: (s) => scores.push(s.vmaf),
          error: reject,
          complete: () => {
            const ms = now() - t0;
            resolve({ frames: scores.length, ms, fps: (scores.length * 1000) / ms, vmaf: mean(scores) });
          },
        });
    });
  const measureBackend = async (options, n) => {
    let t = now();
    const backend = await GpuBackend.open({ adapter: args.adapter, onWarning: () => {}, ...options });
    const openMs = now() - t;
    try {
      t = now();
      const warm = await run(backend, warmup); // compiles the kernels (cached per backend)
      const warmMs = now() - t;
      backend.resetStageTimings?.();
      const r = await run(backend, n);
      return { ...r, depth: backend.depth, openMs, warmupFrames: warm.frames, warmupMs: warmMs, stages: backend.stageTimings(), adapter: backend.gpu.adapterName, software: backend.gpu.isSoftware };
    } finally {
      await backend.close();
    }
  };

  const keepAlive = setInterval(() => {}, 1000);
  const main = await measureBackend({}, N);
  log(`extract ${width}x${height}: ${main.frames} frames, ${main.fps.toFixed(1)} fps`);
  const result = { ...main, width, height, ring: K };
  if (timing) {
    const timed = await measureBackend({ timing: true }, N);
    result.timed = { fps: timed.fps, ms: timed.ms, stages: timed.stages };
  }
  result.depthSweep = [];
  for (const depth of main.fps > 100 ? depths : []) {
    const r = await measureBackend({ depth }, N);
    result.depthSweep.push({ depth, fps: r.fps, ms: r.ms });
  }
  clearInterval(keepAlive);
  return result;
}

// ---- score (end to end) ---------------------------------------------------------------------

async function scoreRun() {
  const { reference, distorted, options = {} } = args;
  const lib = await import(dist('index.js'));
  const pooling = new lib.RunPooling();
  let backend;
  let openedAt;
  let first;
  let last;
  await new Promise((resolve, reject) => {
    lib
      .score(reference, distorted, {
        ...options,
        onBackend: (b) => {
          backend = b.description;
          openedAt = now();
        },
        onWarning: (w) => log(`warning: ${w}`),
      })
      .subscribe({
        next: (frame) => {
          last = now();
          first ??= last;
          pooling.add(frame);
        },
        error: reject,
        complete: resolve,
      });
  });
  const summaryOut = pooling.summary(lib.VERSION);
  const frames = summaryOut.frameCount;
  return {
    frames,
    pooled: Object.fromEntries(Object.entries(summaryOut.pooled).map(([name, m]) => [name, m.mean])),
    scoreS: (now() - started) / 1000,
    backend,
    threadpool: process.env.UV_THREADPOOL_SIZE ?? '(default 4)',
    openS: openedAt === undefined ? null : (openedAt - started) / 1000,
    firstResultS: first === undefined ? null : (first - started) / 1000,
    // results per second between the first result and the last: start-up left out
    steadyFps: frames > 1 ? ((frames - 1) * 1000) / (last - first) : null,
  };
}

// ---- latency --------------------------------------------------------------------------------

async function latency() {
  const { backend: kind, threads, window, frames, warmup = 5 } = args;
  const [lib, { Observable }] = await Promise.all([import(dist('index.js')), import('rxjs')]);
  const keepAlive = setInterval(() => {}, 1000);
  let backend;
  if (kind === 'cpu') {
    const { CpuBackend } = await import(dist('kernels/cpu-backend.js'));
    backend = new CpuBackend({ threads });
  } else {
    const { GpuBackend } = await import(dist('kernels/gpu/gpu-backend.js'));
    backend = await GpuBackend.open({ adapter: args.adapter, onWarning: () => {} });
  }
  const model = await lib.loadModel(lib.parseModelSpec('version=vmaf_v0.6.1:name=vmaf'));
  const ref = lib.openFrameSource(args.ref, { poolSlots: window + 4 });
  const dis = lib.openFrameSource(args.dis, { poolSlots: window + 4 });
  const it = lib.pairFrames(ref, dis, { frameCnt: frames })[Symbol.asyncIterator]();

  // At most `window` pairs inside the backend (entered, result not out yet), as score()'s
  // credits: a pair enters as soon as one is free. window 2 is lock-step: a pair enters when
  // the previous one is computed (frame N's result needs frame N + 1 computed: motion2).
  const tin = [];
  const tout = [];
  let entered = 0;
  let emitted = 0;
  let pump = () => {};
  const pairs$ = new Observable((sub) => {
    let busy = false;
    let done = false;
    pump = async () => {
      if (busy || done) return;
      busy = true;
      try {
        while (!sub.closed && !done && entered - emitted < window) {
          const r = await it.next();
          if (r.done) {
            done = true;
            sub.complete();
            break;
          }
          tin[r.value.index] = now();
          entered++;
          sub.next(r.value);
        }
      } catch (e) {
        sub.error(e);
      } finally {
        busy = false;
      }
    };
    void pump();
  });
  const scores = [];
  await new Promise((resolve, reject) => {
    backend.extract(pairs$).subscribe({
      next: (f) => {
        scores.push(model.predict(f.features).vmaf);
        tout[f.index] = now();
        emitted++;
        void pump();
      },
      error: reject,
      complete: resolve,
    });
  });
  await backend.close();
  await Promise.all([ref.close(), dis.close()]);
  clearInterval(keepAlive);

  const n = tout.length;
  const skip = Math.min(warmup, Math.max(1, Math.floor(n / 4)));
  // compute latency of frame k: its entry to the moment frames 0..k are all computed, which
  // is when frame k - 1's result comes out (motion2 holds each frame for the next one).
  const computeMs = [];
  const resultMs = [];
  for (let k = skip; k < n; k++) {
    resultMs.push(tout[k] - tin[k]);
    if (k >= 1) computeMs.push(tout[k - 1] - tin[k]);
  }
  return {
    backend: backend.description, kind, threads, window, frames: n, skipped: skip,
    // from the first pair's entry to the last result, and results per second once warmed up
    spanS: n > 0 ? (tout[n - 1] - tin[0]) / 1000 : null,
    steadyFps: n - 1 - skip >= 8 ? ((n - 1 - skip) * 1000) / (tout[n - 1] - tout[skip]) : null, // too few frames: no rate
    compute: summary(computeMs), result: summary(resultMs), vmaf: mean(scores),
  };
}

// ---- main ---------------------------------------------------------------------------------

const modes = { probe, compute, extract, score: scoreRun, latency };
if (!modes[mode]) {
  log(`unknown mode ${mode} (${Object.keys(modes).join(', ')})`);
  process.exit(2);
}
try {
  finish(await modes[mode]());
} catch (e) {
  log(`${mode} failed: ${e?.stack ?? e}`);
  process.exit(1);
}
