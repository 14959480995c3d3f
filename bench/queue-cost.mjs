// Queue (issue 11) costs on this machine: the merge per frame (results across Redis, lossless
// codec, pooling) and the wall time of one title on 1 and 2 cpu worker processes against the
// single run at the same total thread count. Needs redis-server; run after npm run build:
//   node bench/queue-cost.mjs [ref] [dis] [--threads N] [--segment N]
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../test/helpers/redis.mjs';
import { goldenFile } from '../test/helpers/golden.mjs';
import { encodeFrames, decodeFrames } from '../dist/queue/result-codec.js';
import { RunPooling } from '../dist/pipeline/summary.js';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const args = process.argv.slice(2);
const flag = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const positional = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const ref = positional[0] ?? goldenFile('ladder_320x180_300f/ref.mp4');
const dis = positional[1] ?? goldenFile('ladder_320x180_300f/dis.mp4');
const threads = Number(flag('--threads', '4'));
const segment = flag('--segment', '100');

function time(argv) {
  const t = performance.now();
  const r = spawnSync(process.execPath, [BIN, ...argv], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return (performance.now() - t) / 1000;
}

// 1. Merge cost per frame, from a real log's frames.
const log = '/tmp/queue-cost-single.json';
time(['-r', ref, '-d', dis, '--json', '-o', log, '-q', '--backend', 'cpu', '--precision', '17']);
const frames = JSON.parse(readFileSync(log, 'utf8')).frames.map((f) => ({ index: f.frameNum, features: Object.fromEntries(Object.entries(f.metrics).filter(([k]) => k !== 'vmaf')), scores: { vmaf: f.metrics.vmaf } }));
const rounds = Math.max(1, Math.ceil(200000 / frames.length));
let bytes = 0;
let t = performance.now();
for (let i = 0; i < rounds; i++) {
  const text = JSON.stringify(encodeFrames(frames));
  bytes = text.length;
  const back = decodeFrames(JSON.parse(text));
  const pooling = new RunPooling();
  for (const f of back) pooling.add(f);
}
const perFrameUs = ((performance.now() - t) * 1000) / (rounds * frames.length);
console.log(`merge: ${perFrameUs.toFixed(2)} µs per frame (encode, JSON across Redis, decode, pooling), ${(bytes / frames.length).toFixed(0)} bytes per frame in Redis`);

// 2. One title: single run vs 1 and 2 worker processes at the same total threads.
const redis = await startRedis();
const single = time(['-r', ref, '-d', dis, '--json', '-o', '/tmp/queue-cost-a.json', '-q', '--backend', 'cpu', '--threads', String(threads)]);
console.log(`single run, ${threads} threads: ${single.toFixed(2)} s`);
for (const workers of [1, 2]) {
  const children = [];
  for (let k = 0; k < workers; k++) {
    const child = spawn(process.execPath, [BIN, 'worker', '--queue', redis.url, '--threads', String(threads / workers), '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise((resolve) => child.stderr.on('data', (d) => /ready/.test(String(d)) && resolve()));
    children.push(child);
  }
  const queued = time(['-r', ref, '-d', dis, '--json', '-o', '/tmp/queue-cost-b.json', '-q', '--queue', redis.url, '--segment', segment]);
  const same = readFileSync('/tmp/queue-cost-a.json', 'utf8') === readFileSync('/tmp/queue-cost-b.json', 'utf8');
  console.log(`${workers} worker${workers > 1 ? 's' : ''} × ${threads / workers} threads, --segment ${segment}: ${queued.toFixed(2)} s (${(((queued - single) / single) * 100).toFixed(1)}% vs single), log identical: ${same}`);
  for (const c of children) c.kill('SIGTERM');
}
await redis.stop();
