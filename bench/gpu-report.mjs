#!/usr/bin/env node
// The gpu suite's rows of a bench report, in detail (run.mjs's table shows one fps per row):
//   node bench/gpu-report.mjs [bench/results/latest.json]
// Prints markdown: the targets, the kernels' GPU times (per kernel and per dispatch), the
// host-memory path's stage times, end to end against decode-only, and the latency table.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? new URL('./results/latest.json', import.meta.url).pathname;
const report = JSON.parse(readFileSync(file, 'utf8'));
const rows = report.rows.filter((r) => r.suite === 'gpu');
const f = (x, d = 1) => (x == null || Number.isNaN(x) ? '–' : x.toFixed(d));
const pct = (x) => (x == null ? '–' : `${(x * 100).toFixed(0)}%`);
const met = (m) => (m == null ? '–' : m ? 'yes' : '**no**');
const cell = (s) => String(s ?? '–').replace(/\|/g, '\\|');
const out = [];

out.push('## gpu suite, in detail', '');
const d = report.device ?? {};
out.push(`- GPU: ${d.gpu ?? 'none'}; CPU: ${d.cpu}, ${d.cores} cores`);
out.push(`- command: \`${report.command}\`${d['gpu suite options'] ? ` (gpu suite options: \`${d['gpu suite options']}\`)` : ''}`);
for (const s of report.skipped ?? []) if (s.suite === 'gpu') out.push(`- **skipped**: ${s.reason}`);
if (!rows.length) {
  process.stdout.write(`${out.join('\n')}\n`);
  process.exit(0);
}
for (const r of rows.filter((r) => r.error)) out.push(`- **${r.name} failed**: ${r.error.replace(/\s+/g, ' ')}`);
out.push('');

// ---- targets
out.push('### Targets (NVIDIA H100)', '');
out.push('| measurement | device | frame size | frames | fps | target | met |');
out.push('|---|---|---|--:|--:|---|---|');
for (const r of rows.filter((r) => r.detail?.target)) {
  const t = r.detail.target;
  let fps = f(r.fps);
  let m = met(t.met);
  if (r.detail.ofDecode) {
    fps += ` (${pct(r.detail.ofDecode.wall)} of decode wall; steady ${f(r.detail.steadyFps)}, ${pct(r.detail.ofDecode.steady)} of ffmpeg's reported fps)`;
    m = `${met(t.met)} (wall), ${met(t.metSteady)} (steady)`;
  }
  out.push(`| ${cell(r.name)} | ${cell(r.device)} | ${r.frameSize ?? '–'} | ${r.frames ?? '–'} | ${fps} | ${cell(t.what)} | ${m} |`);
}
out.push('');

// ---- compute
const compute = rows.filter((r) => r.name.startsWith('gpu compute') && r.name.includes('GPU timestamps'));
if (compute.length) {
  out.push('### Kernels alone (8 pairs resident on the GPU; VIF + ADM + motion)', '');
  out.push('| frame size | frames | fps, GPU timestamps | ms/frame | per command buffer ms/frame p50 / p99 | fps, first to last timestamp | fps, wall clock (submit per frame) | fps, wall (one submit) | VIF ms | ADM ms | motion ms | kernel create ms | exact vs cpu |');
  out.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const r of compute) {
    const x = r.detail;
    const g = x.gpu;
    out.push(
      `| ${r.frameSize} | ${r.frames} | ${f(g?.fps)} | ${f(g?.msPerFrame, 3)} | ${f(g?.batchMsPerFrame?.p50, 3)} / ${f(g?.batchMsPerFrame?.p99, 3)} | ${f(g?.spanFps)} | ${f(x.wall?.fps)} | ${f(g?.submitToDoneFps)} | ` +
        `${f(x.perKernel?.vif, 3)} | ${f(x.perKernel?.adm, 3)} | ${f(x.perKernel?.motion, 3)} | ${f(x.kernelCreateMs, 0)} | ${x.check ? (x.check.exact ? 'yes' : `**no** (${x.check.mismatches} of ${x.check.values})`) : '–'} |`,
    );
  }
  out.push('');
  for (const r of compute.filter((r) => r.detail.perDispatch)) {
    const p = r.detail.perDispatch;
    out.push(`- ${r.frameSize}, per dispatch (each in its own timed pass, mean of ${p.frames} frames, ms): ${Object.entries(p.ms).map(([k, v]) => `${k} ${f(v, 3)}`).join(', ')}`);
  }
  out.push('');
}

// ---- extract
for (const r of rows.filter((r) => r.name.startsWith('gpu extract'))) {
  const x = r.detail;
  out.push('### From host memory (GpuBackend.extract + finish + predict)', '');
  out.push('| frame size | frames | fps | depth | fps with timing | GPU upload ms | GPU compute ms | GPU readback ms | host write ms | submit to stats ms | other depths | pooled VMAF |');
  out.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|');
  const s = x.timed?.stages;
  out.push(
    `| ${r.frameSize} | ${r.frames} | ${f(r.fps)} | ${x.depth ?? '–'} | ${f(x.timed?.fps)} | ${f(s?.upload, 3)} | ${f(s?.compute, 3)} | ${f(s?.readback, 3)} | ${f(s?.hostWrite, 3)} | ${f(s?.hostWait, 3)} | ` +
      `${(x.depthSweep ?? []).map((d) => `depth ${d.depth}: ${f(d.fps)} fps`).join(', ') || '–'} | ${f(r.vmaf, 4)} |`,
  );
  out.push('');
}

// ---- end to end
for (const r of rows.filter((r) => r.detail?.ofDecode)) {
  const x = r.detail;
  out.push('### End to end (ffmpeg decoding both mp4 files)', '');
  out.push('| measurement | frames | fps (child wall) | steady fps | decode-only fps (wall) | ffmpeg-reported fps | of decode, wall | of decode, steady | first result s | pooled VMAF |');
  out.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  out.push(
    `| ${cell(r.name)} | ${r.frames} | ${f(r.fps)} | ${f(x.steadyFps)} | ${f(x.decodeOnly?.fps)} | ${f(x.decodeOnly?.ffmpegReportedFps)} | ${pct(x.ofDecode.wall)} | ${pct(x.ofDecode.steady)} | ${f(x.firstResultS, 2)} | ${f(r.vmaf, 4)} |`,
  );
  out.push('');
}

// ---- latency
const lat = rows.filter((r) => r.latencyMs || r.name.includes('latency'));
if (lat.length) {
  out.push('### Per-frame latency (ms; pair enters extract() -> its result)', '');
  out.push('| backend | device | pairs in flight | frames | compute p50 | compute p99 | result p50 | result p99 | steady fps |');
  out.push('|---|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of lat) {
    const x = r.detail;
    out.push(
      `| ${cell(r.name)} | ${cell(r.device)} | ${x.window ?? '–'} | ${r.frames ?? '–'} | ${f(x.compute?.p50, 2)} | ${f(x.compute?.p99, 2)} | ${f(x.result?.p50, 2)} | ${f(x.result?.p99, 2)} | ${f(x.steadyFps)} |`,
    );
  }
  out.push('');
  out.push('compute latency: entry of pair N to the moment frames 0..N are all computed (frame N-1\'s result: motion2 holds each frame for the next);');
  out.push('result latency: entry of pair N to its own score, the wait for frame N+1 included. The first frames (kernel compilation) are left out.');
  out.push('');
}
out.push('Rows of the gpu suite: fps is what each row\'s method says (GPU timestamps, in-process wall clock, or child wall for end to end), not always the');
out.push('child\'s wall time; "CPU cores busy" and RSS are over the whole child. Method per row: `detail.method` in the JSON.');
process.stdout.write(`${out.join('\n')}\n`);
