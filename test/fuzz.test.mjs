// The fuzzer, bounded: a fixed seed's first cases of every kind (mutated y4m headers and
// frame data, raw geometry against file length, damaged compressed streams through the
// bundled ffmpeg, broken model JSON, odd option strings), then every case the corpus
// keeps (test/fuzz-corpus: each case that ever failed). The real CLI runs each as a child
// process: a valid log, or a clear error naming the input with exit 1 or 2; never a crash,
// a hang, an unhandled rejection or an ffmpeg child left behind (helpers/fuzz-cases.mjs).
// Longer runs: npm run fuzz -- --minutes N [--seed S] [--backend cpu|gpu].
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import { CASE_KINDS, generateCase, loadCorpus, prepareCompressedBases, prepareGoodPair, runCase } from './helpers/fuzz-cases.mjs';

const SEED = Number(process.env.VMAF_FUZZ_SEED ?? 20261124);
/** Cases from the seed: about a minute on a 2-core machine (the cpu backend, ~1 s each). */
const CASES = Number(process.env.VMAF_FUZZ_CASES ?? 40);
/** Per case; a case that needs longer is a hang. */
const TIMEOUT_MS = 90000;

describe('fuzz (cpu backend, the real CLI)', function () {
  const work = mkdtempSync(join(tmpdir(), 'vmaf-fuzz-test-'));
  const goodDir = join(work, 'good');
  let bases;

  before(() => {
    prepareGoodPair(goodDir);
    bases = prepareCompressedBases(ffmpegInstaller.path, join(work, 'bases'));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('has compressed streams to damage (the bundled ffmpeg encodes them)', () => {
    assert.ok(bases.length >= 4, `${bases.length} compressed bases`);
  });

  it(`seed ${SEED}: ${CASES} generated cases, every one a valid log or a clear error`, async function () {
    const failures = [];
    const outcomes = {};
    for (let i = 0; i < CASES; i++) {
      const c = generateCase(SEED, i, bases);
      const result = await runCase(c, { dir: join(work, 'case'), goodDir, backend: 'cpu', timeoutMs: TIMEOUT_MS });
      const key = `${c.kind} ${result.ok ? result.reason : 'FAIL'}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      if (!result.ok) failures.push(`${c.name} (${c.description}): ${result.reason}\n${result.stderr.slice(0, 600)}`);
    }
    // Each kind was tried, and both outcomes occur: the generator reaches past the first check.
    for (const kind of CASE_KINDS) assert.ok(Object.keys(outcomes).some((k) => k.startsWith(kind)), `no ${kind} case ran`);
    assert.ok(Object.keys(outcomes).some((k) => k.endsWith(' log')), `no case gave a log: ${JSON.stringify(outcomes)}`);
    assert.deepEqual(failures, []);
  });

  const corpus = loadCorpus();
  it(`the corpus: ${corpus.length} kept cases replayed`, async function () {
    assert.ok(corpus.length > 0, 'test/fuzz-corpus is empty');
    const failures = [];
    for (const c of corpus) {
      const result = await runCase(c, { dir: join(work, 'case'), goodDir, backend: 'cpu', timeoutMs: TIMEOUT_MS });
      if (!result.ok) failures.push(`${c.name} (${c.description}): ${result.reason}\n${result.stderr.slice(0, 600)}`);
    }
    assert.deepEqual(failures, []);
  });
});
