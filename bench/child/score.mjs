// One library run, in its own process so that its memory and CPU time are its own:
//   node bench/child/score.mjs '<json>'
// where json is { reference, distorted, options } for score(reference, distorted, options).
// The parent sets UV_THREADPOOL_SIZE in this process's environment: it sizes libuv's pool,
// which only the gpu backend's staging copies use (the cpu backend has a pool of its own,
// sized by `threads`). Prints one JSON line on stdout:
// { frames, pooled: { <metric>: mean }, scoreS, threadpool, maxRssKiB, cpuS, backend }.
import { resourceUsage } from 'node:process';

const { reference, distorted, options = {} } = JSON.parse(process.argv[2]);
const started = performance.now();
const lib = await import(new URL('../../dist/index.js', import.meta.url).href);
const pooling = new lib.RunPooling();
let backend;
await new Promise((resolve, reject) => {
  lib
    .score(reference, distorted, { ...options, onBackend: (b) => (backend = b.description), onWarning: (w) => process.stderr.write(`warning: ${w}\n`) })
    .subscribe({ next: (frame) => pooling.add(frame), error: reject, complete: resolve });
});
const scoreS = (performance.now() - started) / 1000;
const summary = pooling.summary(lib.VERSION);
const usage = resourceUsage();
const pooled = Object.fromEntries(Object.entries(summary.pooled).map(([name, m]) => [name, m.mean]));
process.stdout.write(
  `${JSON.stringify({
    frames: summary.frameCount,
    pooled,
    scoreS,
    backend,
    threadpool: process.env.UV_THREADPOOL_SIZE ?? '(default 4)',
    maxRssKiB: usage.maxRSS,
    cpuS: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
  })}\n`,
);
