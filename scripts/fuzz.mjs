#!/usr/bin/env node
// The long fuzz run: npm run fuzz -- --minutes N [--seed S] [--backend cpu|gpu] [--timeout SECONDS]
// [--sweep]. Generates cases with the generator test/fuzz.test.mjs uses (test/helpers/
// fuzz-cases.mjs), runs the real CLI on each, and keeps every failing case under
// test/fuzz-corpus/ (commit it: the test replays the corpus). --sweep also runs the full size
// sweep (test/helpers/size-sweep.mjs) on the backend. Exit 1 when any case failed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import { generateCase, prepareCompressedBases, prepareGoodPair, runCase, saveCase } from '../test/helpers/fuzz-cases.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    seed: { type: 'string' },
    backend: { type: 'string', default: 'cpu' },
    timeout: { type: 'string', default: '120' },
    sweep: { type: 'boolean', default: false },
    'keep-going': { type: 'boolean', default: true },
  },
});
const minutes = Number(values.minutes);
const seed = values.seed === undefined ? (Date.now() % 1_000_000) : Number(values.seed);
const backend = values.backend;
if (!(minutes > 0) || !Number.isInteger(seed) || !['cpu', 'gpu'].includes(backend)) {
  process.stderr.write('usage: npm run fuzz -- --minutes N [--seed S] [--backend cpu|gpu] [--timeout SECONDS] [--sweep]\n');
  process.exit(2);
}
const timeoutMs = Number(values.timeout) * 1000;
const work = mkdtempSync(join(tmpdir(), 'vmaf-fuzz-'));
const goodDir = join(work, 'good');
prepareGoodPair(goodDir);
const bases = prepareCompressedBases(ffmpegInstaller.path, join(work, 'bases'));
process.stdout.write(`fuzz: seed ${seed}, backend ${backend}, ${minutes} min, ${bases.length} compressed bases, work ${work}\n`);

const deadline = Date.now() + minutes * 60000;
const outcomes = new Map();
let failures = 0;
let index = 0;
for (; Date.now() < deadline; index++) {
  const c = generateCase(seed, index, bases);
  const result = await runCase(c, { dir: join(work, 'case'), goodDir, backend, timeoutMs });
  const key = `${c.kind} ${result.ok ? result.reason : 'FAIL'}`;
  outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  if (!result.ok) {
    failures++;
    const kept = saveCase(c, result);
    process.stdout.write(`FAIL ${c.name}: ${result.reason}\n  ${c.description}\n  kept in ${kept}\n  ${result.stderr.split('\n').slice(0, 6).join('\n  ')}\n`);
  }
}
process.stdout.write(`fuzz: ${index} cases in ${minutes} min (seed ${seed}, backend ${backend}), ${failures} failed\n`);
for (const [key, count] of [...outcomes].sort()) process.stdout.write(`  ${key}: ${count}\n`);

if (values.sweep) {
  const { sweepCases, runSweepCase } = await import('../test/helpers/size-sweep.mjs');
  const cases = await sweepCases({ full: true });
  let sweepFailures = 0;
  const started = Date.now();
  for (const [k, sc] of cases.entries()) {
    if (k % 500 === 0) process.stdout.write(`sweep: ${k} of ${cases.length} cases, ${sweepFailures} failed\n`);
    const failure = await runSweepCase(sc, { backends: backend === 'gpu' ? ['cpu', 'gpu'] : ['cpu'] });
    if (failure) {
      sweepFailures++;
      process.stdout.write(`SWEEP FAIL ${failure}\n`);
    }
  }
  process.stdout.write(`sweep: ${cases.length} cases in ${((Date.now() - started) / 60000).toFixed(1)} min, ${sweepFailures} failed\n`);
  failures += sweepFailures;
}
rmSync(work, { recursive: true, force: true });
process.exit(failures ? 1 : 0);
