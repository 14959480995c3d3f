// The cpu backend's worker pool (src/kernels/cpu/thread-pool.h): `threads: N` runs N jobs
// at once whatever touched libuv's pool first, each backend keeps at most its own N jobs in
// flight, and the pool neither keeps Node alive when idle nor lets it exit under a pending
// job. Nothing here is timed: concurrency is proven by a rendezvous of pool jobs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { from, lastValueFrom, toArray } from 'rxjs';
import { CpuBackend } from '../dist/kernels/cpu-backend.js';
import { loadNative } from '../dist/kernels/native.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
// The rendezvous gives up after this long instead of hanging on a pool too small.
const PROBE_TIMEOUT_MS = 60_000;

/** Runs an ES module snippet in a fresh Node from the package root; its stdout. */
async function node(source) {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', source], { cwd: root });
  return stdout.trim();
}

/** A pseudo-random 8-bit frame with some structure, so every kernel has work. */
function lumaOf(width, height, seed) {
  const luma = new Uint8Array(width * height);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < luma.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    luma[i] = (((i % width) * 3 + Math.floor(i / width) * 2) & 0xff) ^ (x & 0x1f);
  }
  return luma;
}

describe('cpu backend: its own worker pool', function () {
  it('`threads: N` sizes the pool to run N jobs at once', async function () {
    const native = loadNative();
    const threads = Math.max(6, native.poolStats().threads + 1);
    const backend = new CpuBackend({ threads });
    assert.ok(native.poolStats().threads >= threads, `the pool has at least ${threads} threads`);
    const seen = await Promise.all(native.probePoolConcurrency(threads, PROBE_TIMEOUT_MS));
    assert.deepEqual(seen, new Array(threads).fill(threads), `${threads} jobs ran at once`);
    await backend.close();
  });

  it('does so although libuv\'s pool started first with its default size', async function () {
    // Reading a file starts libuv's pool at 4 threads before the backend exists.
    const out = await node(`
      import { readFile } from 'node:fs/promises';
      delete process.env.UV_THREADPOOL_SIZE;
      await readFile('package.json');
      const { CpuBackend } = await import('./dist/kernels/cpu-backend.js');
      const { loadNative } = await import('./dist/kernels/native.js');
      new CpuBackend({ threads: 7 });
      const seen = await Promise.all(loadNative().probePoolConcurrency(7, ${PROBE_TIMEOUT_MS}));
      console.log(JSON.stringify({ threads: loadNative().poolStats().threads, seen }));
    `);
    const { threads, seen } = JSON.parse(out);
    assert.equal(threads, 7);
    assert.deepEqual(seen, [7, 7, 7, 7, 7, 7, 7]);
  });

  it('keeps each backend within its own thread count', async function () {
    const native = loadNative();
    const width = 96;
    const height = 64;
    const format = { width, height, bitDepth: 8, chroma: '420' };
    const frame = (index, seed) => ({ index, format, luma: lumaOf(width, height, seed), release() {} });
    const pairs = Array.from({ length: 24 }, (_, i) => ({ index: i, ref: frame(i, 2 * i + 1), dis: frame(i, 2 * i + 2) }));
    const backend = new CpuBackend({ threads: 2 });
    assert.ok(native.poolStats().threads > 2, 'a larger pool from the tests before');
    native.resetPoolPeak();
    const before = native.poolStats().completed;
    const results = await lastValueFrom(backend.extract(from(pairs)).pipe(toArray()));
    const after = native.poolStats();
    assert.equal(results.length, pairs.length);
    assert.equal(after.completed - before, pairs.length, 'one pool job per pair');
    assert.ok(after.peakRunning >= 1 && after.peakRunning <= 2, `at most 2 jobs at once, saw ${after.peakRunning}`);
    await backend.close();
  });

  it('keeps Node alive under a pending job and lets it exit when idle', async function () {
    // A top-level await on a pool job: an unreferenced pool would let Node exit early
    // (exit code 13, "unsettled top-level await"); a referenced idle pool would never exit.
    const out = await node(`
      const { loadNative } = await import('./dist/kernels/native.js');
      const native = loadNative();
      native.reservePoolThreads(3);
      const a = new Uint8Array(64 * 48).map((_, i) => i * 7);
      const b = new Uint8Array(64 * 48).map((_, i) => i * 5);
      const { sad } = await native.computeFrameStats(a, b, 64, 48, 8, b);
      console.log(String(sad === native.motionSad(b, a, 64, 48, 8)));
    `);
    assert.equal(out, 'true');
  });

  it('exits cleanly when the process exits with jobs still queued and running', async function () {
    const out = await node(`
      const { loadNative } = await import('./dist/kernels/native.js');
      const native = loadNative();
      native.reservePoolThreads(2);
      const a = new Uint8Array(320 * 240).fill(9);
      for (let i = 0; i < 40; i++) void native.computeFrameStats(a, a, 320, 240, 8, a);
      console.log('queued');
      process.exit(0);
    `);
    assert.equal(out, 'queued');
  });

  it('runs in a worker thread with a pool of its own, joined when the worker ends', async function () {
    const out = await node(`
      import { Worker } from 'node:worker_threads';
      const worker = new Worker(\`
        const { parentPort } = require('node:worker_threads');
        const native = require('./build/Release/vmaf_native.node');
        native.reservePoolThreads(2);
        Promise.all(native.probePoolConcurrency(2, ${PROBE_TIMEOUT_MS})).then((seen) => parentPort.postMessage(seen));
      \`, { eval: true, execArgv: [] });
      const [seen] = await Promise.all([new Promise((r) => worker.once('message', r)), new Promise((r) => worker.once('exit', r))]);
      console.log(JSON.stringify(seen));
    `);
    assert.equal(out, '[2,2]');
  });
});
