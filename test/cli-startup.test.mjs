// What the command line loads at start-up (issue 9: a run's start-up is mostly module loading):
// a plain scoring run loads none of the modules of what it did not ask for. The modules are
// recorded by a module hook (helpers/record-modules.mjs), which sees dynamic imports too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { goldenClip } from './helpers/golden.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const HOOK = fileURLToPath(new URL('./helpers/record-modules.mjs', import.meta.url));
const DIST = new URL('../dist/', import.meta.url).href;
const clip = goldenClip('src01_160x90_8bit');
const tmp = mkdtempSync(join(tmpdir(), 'vmaf-startup-'));

/** Runs the CLI; its exit status and the dist/ modules (paths under dist/) and packages it loaded. */
function modulesOf(name, args, status = 0) {
  const out = join(tmp, `${name}.txt`);
  const r = spawnSync(process.execPath, ['--import', HOOK, BIN, ...args], {
    encoding: 'utf8',
    timeout: 120000,
    env: { ...process.env, VMAF_TEST_MODULES_OUT: out },
  });
  assert.equal(r.status, status, r.stderr);
  const urls = readFileSync(out, 'utf8').split('\n').filter((u) => u !== '');
  const own = urls.filter((u) => u.startsWith(DIST)).map((u) => u.slice(DIST.length));
  // The bundled command line (scripts/bundle-cli.mjs): each chunk loaded stands for the dist/ modules it holds.
  const bundled = own.some((m) => m.startsWith('cli-bundle/'));
  const chunks = bundled ? JSON.parse(readFileSync(new URL('cli-bundle/modules.json', DIST), 'utf8')) : {};
  return {
    dist: new Set(own.flatMap((m) => (m.startsWith('cli-bundle/') ? (chunks[m.slice('cli-bundle/'.length)] ?? []) : [m]))),
    bundled,
    packages: urls.filter((u) => u.includes('/node_modules/')),
  };
}

/** Modules only runs that ask for them load: queue, report, QC and alignment, --list, ffmpeg's decoders, the GPU's. */
const ON_DEMAND = [
  /^queue\/index\.js$/, /^cli\/queue-commands\.js$/, /^report\//, /^align\//, /^pipeline\/qc\.js$/, /^cli\/qc-notices\.js$/,
  /^cli\/list\.js$/, /^decode\/(ffmpeg-source|segmented-source|ffmpeg-probe|input-index)\.js$/, /^kernels\/gpu\//, /-gpu\.js$/,
  /^pool\/staging-ring\.js$/,
];

describe('cli start-up: modules loaded on demand', function () {
  this.timeout(120000);

  it('a plain cpu run (y4m in, JSON log) loads no queue, report, QC, alignment, --list, ffmpeg or GPU module', () => {
    const { dist, packages, bundled } = modulesOf('plain', ['-r', clip.ref, '-d', clip.dis, '--backend', 'cpu', '--json', '-o', join(tmp, 'plain.json'), '--frame_cnt', '2', '-q']);
    assert.ok(bundled, 'the bundled command line ran (npm run build makes it)');
    assert.ok(dist.has('cli/main.js') && dist.has('kernels/cpu-backend.js') && dist.has('decode/y4m-reader.js'), [...dist].join(' '));
    const loaded = [...dist].filter((m) => ON_DEMAND.some((re) => re.test(m)));
    assert.deepEqual(loaded, []);
    assert.deepEqual(packages.filter((p) => /\/node_modules\/(bullmq|ioredis|webgpu)\//.test(p)), []);
    assert.equal(JSON.parse(readFileSync(join(tmp, 'plain.json'), 'utf8')).frames.length, 2);
  });

  it('--version, --help and a usage error load none of a run\'s modules (pipeline, decoders, extractors, backends)', () => {
    for (const [name, args, status] of [['version', ['--version'], 0], ['help', ['--help'], 0], ['usage', ['--bogus'], 2]]) {
      const { dist } = modulesOf(name, args, status);
      const loaded = [...dist].filter((m) => /^(pipeline|decode|extractors|kernels|pool|queue|report|align)\//.test(m) || m === 'cli/run-args.js');
      assert.deepEqual(loaded, [], name);
      assert.ok(dist.has('cli/args.js'), name);
    }
  });

  it('a run with --align, --window and --report loads the QC, alignment and report modules', () => {
    const { dist } = modulesOf('qc', [
      '-r', clip.ref, '-d', clip.dis, '--backend', 'cpu', '--ndjson', '-o', join(tmp, 'qc.ndjson'), '--frame_cnt', '4', '-q',
      '--align', '0', '--window', '2f', '--report', join(tmp, 'qc.html'),
    ]);
    for (const m of ['pipeline/qc.js', 'cli/qc-notices.js', 'align/align-pairs.js', 'report/index.js']) assert.ok(dist.has(m), `${m} not loaded: ${[...dist].join(' ')}`);
    const lines = readFileSync(join(tmp, 'qc.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.some((l) => l.type === 'alignment') && lines.some((l) => l.type === 'window'), 'alignment and window lines in the log');
  });
});
