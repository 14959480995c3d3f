// The gpu backend, measured five ways (each in a child process: bench/child/gpu.mjs):
//
//   compute   VIF + ADM + motion kernels (vmaf_v0.6.1's features) alone, 1920x1080 and
//             3840x2160 8-bit, on 8 distinct frame pairs uploaded to GPU buffers once and
//             cycled through (frame i: pair i % 8, motion against pair (i - 1) % 8).
//             Two rows per size from one run:
//               GPU timestamps  frames encoded 8 per command buffer, a timestamp before and
//                               after each command buffer's frames (each the end of a tiny
//                               pass ordered after the kernels' writes: child/gpu.mjs), every
//                               command buffer submitted at once;
//                               fps = 1000 / (sum of the spans / frames)
//               wall clock      one command buffer + submit per frame (as the backend does),
//                               first encode to onSubmittedWorkDone; fps = frames / that
//             The child also records per-kernel and per-dispatch GPU times, and checks ring
//             frame 1's 57 accumulators against the cpu backend's native code (a mismatch
//             fails the row: it would time wrong results).
//   extract   GpuBackend.open().extract() fed from frame pairs already in host memory (8
//             distinct 1080p pairs cycled), through the staging ring, compute, readback,
//             the native finish step and the vmaf_v0.6.1 prediction: fps = frames / (first
//             pair offered to the last prediction), after a warm-up run on the same backend
//             (kernel compilation). A second backend with timing: true gives stageTimings().
//   e2e       score(ref.mp4, dis.mp4, { backend: 'gpu' }) on the harness's clip (two ffmpeg
//             decoders feeding the library), beside ffmpeg decoding both files alone (the
//             decode suite's measurement, repeated here so the two are side by side): fps is
//             frames / child wall time (start-up included), as in the cpu suite; the steady
//             rate (first result to last) is compared with ffmpeg's own reported fps.
//   latency   cpu and gpu backends' extract() fed pair by pair from the clip's y4m files,
//             each pair's entry and each result stamped: compute latency (entry to "frames
//             0..N computed", i.e. frame N - 1's result, since motion2 holds each frame for
//             the next) and result latency (entry to frame N's own score, the one-frame
//             motion2 wait included); median and p99 after a few warm-up frames. Twice per
//             backend: lock-step (2 pairs in flight: a pair enters once the previous one is
//             computed) and as score() reads a file (its default in-flight credit count).
//
// Without a hardware WebGPU adapter the suite is skipped, saying so. `--gpu-software` runs
// it on a software adapter (lavapipe) instead, with tiny frame counts: a smoke test.
// `--gpu-frames N` sets the frame count of the compute and extract measurements (default
// 600 on hardware); the clip-based ones (e2e, latency) follow run.mjs's --frames.
//
// run.mjs rejects options it does not know, so the two flags are taken out of process.argv
// here, when run.mjs imports the suites (before it parses its own). BENCH_GPU_SOFTWARE=1
// and BENCH_GPU_FRAMES=N in the environment do the same.
import { execFile } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { cpuModel } from '../lib/cpu-model.mjs';
import { prepareRing, ringDescription } from '../lib/frame-ring.mjs';
import decode from './decode.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, '../child/gpu.mjs');

/** Frame counts and limits on a hardware adapter, and on a software one (smoke test). */
const PLANS = {
  // warmupMinMs: compute warm-up at least this long (GPU clocks); maxRunS: a compute run of
  // an adapter far slower than expected is cut to about this long (fewer frames, said so)
  hardware: { inMemoryFrames: 600, clipFrames: Infinity, latencyFrames: 200, warmup: 16, extractWarmup: 64, warmupMinMs: 500, maxRunS: 20, breakdown: 64, dispatchProfile: 16, depths: [6], timeoutS: 300 },
  software: { inMemoryFrames: 2, clipFrames: 4, latencyFrames: 4, warmup: 1, extractWarmup: 1, warmupMinMs: 0, maxRunS: 0, breakdown: 1, dispatchProfile: 1, depths: [], timeoutS: 1800 },
};
/** Targets on an NVIDIA H100 (for the report; nothing fails on them). */
const TARGETS = { compute1080: 1500, compute2160: 400, extract1080: 1000, e2eOfDecode: 0.9 };
const SIZES = [
  { width: 1920, height: 1080, target: TARGETS.compute1080 },
  { width: 3840, height: 2160, target: TARGETS.compute2160 },
];

export const GPU_OPTIONS = takeOptions(process.argv, process.env);

function takeOptions(argv, env) {
  const opts = { software: /^(1|true|yes)$/i.test(env.BENCH_GPU_SOFTWARE ?? ''), frames: undefined, given: [] };
  const frames = (v, where) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 2) {
      process.stderr.write(`bench: ${where} must be a whole number >= 2, got ${v}\n`);
      process.exit(2);
    }
    return n;
  };
  if (env.BENCH_GPU_FRAMES) opts.frames = frames(env.BENCH_GPU_FRAMES, 'BENCH_GPU_FRAMES');
  for (let i = 2; i < argv.length; ) {
    const [flag, value] = argv[i].split(/=(.*)/s, 2);
    if (flag === '--gpu-software' && value === undefined) {
      opts.software = true;
      opts.given.push(flag);
      argv.splice(i, 1);
    } else if (flag === '--gpu-frames') {
      const v = value ?? argv[i + 1];
      opts.frames = frames(v, '--gpu-frames');
      opts.given.push(`${flag} ${v}`);
      argv.splice(i, value === undefined ? 2 : 1);
    } else i++;
  }
  return opts;
}

const mib = (kib) => (kib ? kib / 1024 : null);
const tail = (text, n = 600) => text.trim().slice(-n);
const fmt = (x, d = 1) => (x == null ? '–' : x.toFixed(d));

function lastJsonLine(text) {
  try {
    return JSON.parse(text.trim().split('\n').at(-1));
  } catch {
    return undefined;
  }
}

/** The adapter probe (in a child: Dawn stays out of the bench's own process). */
let probed;
function probe(ctx) {
  probed ??= new Promise((resolve) => {
    const payload = JSON.stringify({ software: GPU_OPTIONS.software });
    execFile(process.execPath, [CHILD, 'probe', payload], { timeout: 120_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const out = lastJsonLine(stdout ?? '');
      if (out) return resolve(out);
      const why = tail((stderr ?? '').split('\n').filter((l) => !l.startsWith('Warning: ')).join('\n'), 300);
      ctx.log(`gpu: adapter probe failed: ${why || (err?.message ?? err)}`);
      resolve({ error: why || String(err?.message ?? err) });
    });
  });
  return probed;
}

function adapterLabel(p) {
  return `${p.chosen.name}${p.isSoftware ? ' (software)' : ''}`;
}

/** Runs one child measurement; returns { r, out, row } with the row's common fields filled in. */
async function childRun(ctx, { mode, payload, name, threads, command, env = {}, device }) {
  const argv = [CHILD, mode, JSON.stringify(payload)];
  ctx.log(`${name} ...`);
  const r = await ctx.measure(process.execPath, argv, {
    env: { ...process.env, UV_THREADPOOL_SIZE: String(Math.min(1024, threads + 2)), FFMPEG_PATH: ctx.ffmpegPath, ...env },
  });
  const out = r.code === 0 ? lastJsonLine(r.stdout) : undefined;
  const row = {
    suite: undefined,
    name,
    threads,
    command,
    device,
    frameSize: null,
    frames: null,
    wallS: null,
    fps: null,
    maxRssMiB: mib(Math.max(r.rootMaxRssKiB ?? 0, out?.maxRssKiB ?? 0)),
    treeRssMiB: mib(r.peakTreeRssKiB),
    cpuCores: r.cpuS == null ? null : r.cpuS / r.wallS, // over the child's whole life
    otherCores: r.otherCores,
    vmaf: null,
    detail: { argv: argv.map((a, i) => (i === 0 ? `bench/child/${basename(a)}` : a)), childWallS: r.wallS, exit: r.code ?? r.signal },
  };
  if (!out) row.error = tail(r.stderr) || `exit ${r.code ?? r.signal}`;
  return { r, out, row };
}

// ---- the measurements -----------------------------------------------------------------------

async function computeRows(ctx, plan, p, size, frames) {
  const ring = prepareRing({ ffmpegPath: ctx.ffmpegPath, cacheDir: ctx.cacheDir, width: size.width, height: size.height, log: ctx.log });
  const dims = `${size.width}x${size.height}`;
  const payload = {
    ref: ring.refY4m, dis: ring.disY4m, frames, batch: 8, ring: ring.frames, warmup: plan.warmup, warmupMinMs: plan.warmupMinMs, maxRunS: plan.maxRunS,
    breakdown: plan.breakdown, dispatchProfile: plan.dispatchProfile, adapter: p.chosen.name, timeoutS: plan.timeoutS,
  };
  const kernels = `VifKernel+AdmKernel+MotionKernel.encode() x${frames} on ${ring.frames} resident ${dims} pairs`;
  const { out, row } = await childRun(ctx, {
    mode: 'compute', payload, threads: 1, device: adapterLabel(p),
    name: `gpu compute ${dims} 8-bit, GPU timestamps`,
    command: `${kernels}, 8 per command buffer, all submitted at once; timestamps around each command buffer`,
  });
  const common = { frameSize: dims, frames, ring: ringDescription(ring) };
  Object.assign(row, common);
  const wall = { ...row, detail: { ...row.detail }, name: `gpu compute ${dims} 8-bit, wall clock`, command: `${kernels}, one command buffer + submit per frame, to onSubmittedWorkDone` };
  if (out) {
    row.frames = wall.frames = out.frames; // fewer than asked when the adapter is far too slow (detail.framesReduced)
    row.device = wall.device = out.adapter + (out.software ? ' (software)' : '');
    const target = { fps: size.target, what: `>= ${size.target} fps (H100)` };
    const detail = {
      adapter: out.adapter, timestamps: out.timestamps, openMs: out.openMs, kernelCreateMs: out.createMs, warmup: out.warmup, warmupMs: out.warmupMs,
      framesReduced: out.framesReduced ?? null, gpu: out.gpu ?? null, wall: out.wall, perKernel: out.perKernel ?? null, perDispatch: out.perDispatch ?? null, check: out.check,
    };
    Object.assign(row.detail, detail, { method: 'GPU timestamps: sum over command buffers of (end - begin) / frames', target: { ...target, met: out.gpu ? out.gpu.fps >= size.target : null } });
    Object.assign(wall.detail, detail, { method: 'wall clock: first encode to onSubmittedWorkDone, one submit per frame', target: { ...target, met: out.wall.fps >= size.target } });
    if (out.gpu) {
      row.fps = out.gpu.fps;
      row.wallS = (out.gpu.msPerFrame * out.frames) / 1000;
    } else {
      row.name += ' (adapter has no timestamp-query: not measured)';
    }
    wall.fps = out.wall.fps;
    wall.wallS = out.wall.wallMs / 1000;
    if (!out.check.exact) {
      const msg = `GPU accumulators differ from the cpu backend's on ring frame ${out.check.frame} (${out.check.mismatches} of ${out.check.values} values): these rows time wrong results`;
      row.error = wall.error = msg;
    }
    ctx.log(
      `gpu compute ${dims}: ${fmt(out.gpu?.fps)} fps by GPU timestamps (${fmt(out.gpu?.msPerFrame, 3)} ms/frame), ${fmt(out.wall.fps)} fps wall clock` +
        (out.perKernel ? `; per kernel ms: vif ${fmt(out.perKernel.vif, 3)}, adm ${fmt(out.perKernel.adm, 3)}, motion ${fmt(out.perKernel.motion, 3)}` : '') +
        `; check ${out.check.exact ? 'exact' : 'MISMATCH'}`,
    );
  }
  return [row, wall];
}

async function extractRow(ctx, plan, p, frames) {
  const ring = prepareRing({ ffmpegPath: ctx.ffmpegPath, cacheDir: ctx.cacheDir, width: 1920, height: 1080, log: ctx.log });
  const payload = { ref: ring.refY4m, dis: ring.disY4m, frames, ring: ring.frames, warmup: plan.extractWarmup, depths: plan.depths, adapter: p.chosen.name, timeoutS: plan.timeoutS };
  const { out, row } = await childRun(ctx, {
    mode: 'extract', payload, threads: 1, device: adapterLabel(p),
    name: 'gpu extract 1920x1080 from host memory (upload, compute, readback, finish, predict)',
    command: `GpuBackend.open().extract(${frames} pairs from host memory, ${ring.frames} distinct) + vmaf_v0.6.1 predict, default depth`,
  });
  Object.assign(row, { frameSize: '1920x1080', frames, ring: ringDescription(ring) });
  if (out) {
    row.fps = out.fps;
    row.wallS = out.ms / 1000;
    row.vmaf = out.vmaf;
    row.device = out.adapter + (out.software ? ' (software)' : '');
    Object.assign(row.detail, {
      method: 'frames / (first pair offered to the last prediction), after a warm-up run on the same backend',
      adapter: out.adapter, depth: out.depth, openMs: out.openMs, warmupFrames: out.warmupFrames, warmupMs: out.warmupMs,
      timed: out.timed ?? null, depthSweep: out.depthSweep,
      target: { fps: TARGETS.extract1080, what: `>= ${TARGETS.extract1080} fps (H100)`, met: out.fps >= TARGETS.extract1080 },
    });
    const s = out.timed?.stages;
    ctx.log(
      `gpu extract 1080p: ${fmt(out.fps)} fps (depth ${out.depth})` +
        (s ? `; with timing: ${fmt(out.timed.fps)} fps, GPU ms/frame upload ${fmt(s.upload, 3)} compute ${fmt(s.compute, 3)} readback ${fmt(s.readback, 3)}, host write ${fmt(s.hostWrite, 3)} ms, submit-to-stats ${fmt(s.hostWait, 3)} ms` : '') +
        (out.depthSweep?.length ? `; ${out.depthSweep.map((d) => `depth ${d.depth}: ${fmt(d.fps)} fps`).join(', ')}` : ''),
    );
  }
  return row;
}

async function e2eRows(ctx, plan, p) {
  const { clip, threads } = ctx;
  const dec = (await decode.run(ctx))[0];
  dec.name = 'ffmpeg decode only, both mp4 (the ceiling of the next row)';
  dec.device = cpuModel();
  const ffmpegFps = (() => {
    const all = [...(dec.detail?.stderrTail ?? '').matchAll(/fps=\s*([\d.]+)/g)];
    return all.length ? Number(all.at(-1)[1]) || null : null; // ffmpeg prints 0.0 on very short runs
  })();
  dec.detail.ffmpegReportedFps = ffmpegFps;

  const capped = Number.isFinite(plan.clipFrames) && clip.frames > plan.clipFrames;
  const options = { backend: 'gpu', gpuAdapter: p.chosen.name, threads, ...(capped ? { frameCnt: plan.clipFrames } : {}) };
  const opt = Object.entries(options).map(([k, v]) => `${k}: ${JSON.stringify(v).replace(/"/g, "'")}`).join(', ');
  const { out, row } = await childRun(ctx, {
    mode: 'score', payload: { reference: clip.refMp4, distorted: clip.disMp4, options, timeoutS: plan.timeoutS }, threads, device: adapterLabel(p),
    name: `gpu end to end, mp4 (ffmpeg decode), score()${capped ? ` (first ${plan.clipFrames} frames: smoke test)` : ''}`,
    command: `score(${basename(clip.refMp4)}, ${basename(clip.disMp4)}, { ${opt} }), UV_THREADPOOL_SIZE=${Math.min(1024, threads + 2)}`,
  });
  row.frameSize = `${clip.width}x${clip.height}`;
  if (out) {
    row.frames = out.frames;
    row.device = out.backend ?? row.device;
    row.wallS = row.detail.childWallS;
    row.fps = out.frames / row.wallS;
    row.vmaf = out.pooled?.vmaf ?? null;
    const wallRatio = dec.fps ? row.fps / dec.fps : null;
    const steadyRatio = ffmpegFps && out.steadyFps ? out.steadyFps / ffmpegFps : null;
    Object.assign(row.detail, {
      method: 'fps: frames / child wall time (start-up included, as the cpu suite); steadyFps: first result to last',
      backend: out.backend, openS: out.openS, firstResultS: out.firstResultS, steadyFps: out.steadyFps,
      decodeOnly: { fps: dec.fps, ffmpegReportedFps: ffmpegFps, wallS: dec.wallS },
      ofDecode: { wall: wallRatio, steady: steadyRatio },
      target: { what: `>= ${TARGETS.e2eOfDecode * 100}% of decode-only fps (decode-bound)`, met: wallRatio == null ? null : wallRatio >= TARGETS.e2eOfDecode, metSteady: steadyRatio == null ? null : steadyRatio >= TARGETS.e2eOfDecode },
    });
    ctx.log(
      `gpu end to end: ${fmt(row.fps)} fps (${fmt(wallRatio == null ? null : wallRatio * 100, 0)}% of decode-only ${fmt(dec.fps)} fps); ` +
        `steady ${fmt(out.steadyFps)} fps (${fmt(steadyRatio == null ? null : steadyRatio * 100, 0)}% of ffmpeg's reported ${fmt(ffmpegFps)} fps); first result at ${fmt(out.firstResultS, 2)} s`,
    );
  }
  return [dec, row];
}

async function latencyRow(ctx, plan, p, kind, window, label) {
  const { clip, threads } = ctx;
  const frames = Math.min(clip.frames, plan.latencyFrames);
  const payload = { ref: clip.refY4m, dis: clip.disY4m, backend: kind, threads, window, frames, warmup: 5, adapter: p.chosen.name, timeoutS: plan.timeoutS };
  const backendCall = kind === 'cpu' ? `CpuBackend({ threads: ${threads} })` : `GpuBackend.open()`;
  const { out, row } = await childRun(ctx, {
    mode: 'latency', payload, threads: kind === 'cpu' ? threads : 1, device: kind === 'cpu' ? cpuModel() : adapterLabel(p),
    name: `${kind} latency, ${label}`,
    command: `${backendCall}.extract(pairFrames(${basename(clip.refY4m)}, ${basename(clip.disY4m)}, { frameCnt: ${frames} })) + predict, at most ${window} pairs in the backend`,
  });
  Object.assign(row, { frameSize: `${clip.width}x${clip.height}`, frames });
  if (out) {
    row.frames = out.frames;
    row.device = kind === 'cpu' ? `${cpuModel()}, ${out.backend}` : out.backend;
    row.wallS = out.spanS;
    row.fps = out.spanS ? out.frames / out.spanS : null;
    row.vmaf = out.vmaf;
    row.latencyMs = {
      compute: out.compute && { p50: out.compute.p50, p99: out.compute.p99 },
      result: out.result && { p50: out.result.p50, p99: out.result.p99 },
    };
    Object.assign(row.detail, {
      method: 'each pair stamped as it enters extract(), each result after its prediction; compute latency: entry to frame N-1\'s result (frames 0..N computed); result latency: entry to frame N\'s own result (motion2 wait included)',
      backend: out.backend, window, warmupFramesLeftOut: out.skipped, steadyFps: out.steadyFps, compute: out.compute, result: out.result,
    });
    ctx.log(
      `${kind} latency (${label}): compute p50 ${fmt(out.compute?.p50, 2)} / p99 ${fmt(out.compute?.p99, 2)} ms, ` +
        `result p50 ${fmt(out.result?.p50, 2)} / p99 ${fmt(out.result?.p99, 2)} ms, ${fmt(out.steadyFps)} fps`,
    );
  }
  return row;
}

export default {
  name: 'gpu',
  title: "vmaf-stream's gpu backend (WebGPU): kernels alone (1080p, 2160p), from host memory, end to end, and per-frame latency beside the cpu backend",
  async available(ctx) {
    const p = await probe(ctx);
    if (p.error) return `no GPU adapter: WebGPU (Dawn) could not be loaded or asked (${p.error.replace(/\s+/g, ' ')})`;
    if (!p.chosen) {
      const seen = p.adapters.length ? p.adapters.map((a) => `${a.name}${a.isSoftware ? ' (software)' : ''}`).join(', ') : 'none';
      const hint = p.adapters.some((a) => a.isSoftware) ? '; --gpu-software runs the suite on the software one (a smoke test, tiny frame counts)' : '';
      return `no GPU adapter: no hardware WebGPU adapter (Dawn sees: ${seen})${hint}`;
    }
    return true;
  },
  async device(ctx) {
    const p = await probe(ctx);
    const ts = p.features?.includes('timestamp-query') ? 'timestamp-query' : 'no timestamp-query';
    return {
      gpu: `${adapterLabel(p)} (${p.chosen.backend}; ${ts})`,
      ...(GPU_OPTIONS.given.length ? { 'gpu suite options': GPU_OPTIONS.given.join(' ') } : {}),
    };
  },
  async run(ctx) {
    const p = await probe(ctx);
    const plan = p.isSoftware ? PLANS.software : PLANS.hardware;
    const frames = GPU_OPTIONS.frames ?? plan.inMemoryFrames;
    const scoreWindow = Math.max(4, ctx.threads * 2 + 2); // score()'s default maxFramesInFlight
    const rows = [];
    for (const size of SIZES) rows.push(...(await computeRows(ctx, plan, p, size, frames)));
    rows.push(await extractRow(ctx, plan, p, frames));
    rows.push(...(await e2eRows(ctx, plan, p)));
    for (const kind of ['cpu', 'gpu']) {
      rows.push(await latencyRow(ctx, plan, p, kind, 2, 'lock-step (2 pairs in flight)'));
      rows.push(await latencyRow(ctx, plan, p, kind, scoreWindow, `as score() reads a file (${scoreWindow} pairs in flight)`));
    }
    return rows;
  },
};
