#!/usr/bin/env node
// vmaf-stream's benchmark: `npm run bench [-- options]` (builds first), or `node bench/run.mjs`.
//
//   --frames N        clip length (default 120; the clip is made once and cached in bench/.cache)
//   --threads N       frames at once for every measurement (default: os.availableParallelism())
//   --only a,b        run only these suites (default all: see bench/suites/index.mjs)
//   --repeat N        run every suite N times (interleaved) and report each row's fastest run:
//                     on a shared machine interference only ever slows a run down
//   --json            print the results as JSON instead of a markdown table
//
// Every measurement runs in a child process, one at a time, on the same clip; fps is frames
// over the child's wall time from spawn to exit (start-up included). Memory and CPU time are
// sampled from /proc (bench/lib/measure.mjs). The results also go to bench/results/latest.json.
// Timings depend on the machine and on whatever else runs on it: the report prints the load
// average before and after; nothing here is asserted anywhere.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { clipDescription, prepareClip } from './lib/clip.mjs';
import { cpuModel } from './lib/cpu-model.mjs';
import { measure } from './lib/measure.mjs';
import { SUITES } from './suites/index.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const KiB_PER_MiB = 1024;
/** Other processes' CPU use (cores) during a row above which the report warns. */
const OTHER_LOAD_WARNING = 0.25;

function usage(message) {
  if (message) process.stderr.write(`bench: ${message}\n`);
  process.stderr.write(
    'usage: node bench/run.mjs [--frames N] [--threads N] [--only ' + SUITES.map((s) => s.name).join(',') + '] [--repeat N] [--json]\n',
  );
  process.exit(message ? 2 : 0);
}

function parseArgs(argv) {
  const opts = { frames: 120, threads: availableParallelism(), only: null, json: false, repeat: 1 };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2);
    const next = () => {
      if (value === undefined) {
        value = argv[++i];
        if (value === undefined) usage(`${flag} needs a value`);
      }
      return value;
    };
    const positive = (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) usage(`${flag} must be a positive whole number, got ${v}`);
      return n;
    };
    switch (flag) {
      case '--frames':
        opts.frames = positive(next());
        if (opts.frames < 2) usage('--frames must be at least 2');
        break;
      case '--threads':
        opts.threads = positive(next());
        break;
      case '--only': {
        opts.only = next().split(',').map((s) => s.trim()).filter(Boolean);
        const unknown = opts.only.filter((n) => !SUITES.some((s) => s.name === n));
        if (unknown.length) usage(`unknown suite ${unknown.join(', ')}`);
        break;
      }
      case '--repeat':
        opts.repeat = positive(next());
        break;
      case '--json':
        opts.json = true;
        break;
      case '-h':
      case '--help':
        usage();
        break;
      default:
        usage(`unknown option ${argv[i]}`);
    }
  }
  return opts;
}

function bundledFfmpeg() {
  const path = createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
  if (!path || !existsSync(path)) throw new Error('@ffmpeg-installer/ffmpeg has no binary for this platform');
  return path;
}

/** The native addon's build time, and whether a kernel source is newer than it. */
function nativeBuild() {
  const addon = join(root, 'build/Release/vmaf_native.node');
  if (!existsSync(addon)) return { built: null, newerSources: [] };
  const built = statSync(addon).mtimeMs;
  const dir = join(root, 'src/kernels/cpu');
  const newer = readdirSync(dir).filter((f) => statSync(join(dir, f)).mtimeMs > built);
  return { built: new Date(built).toISOString(), newerSources: newer };
}

/** An argv for display: absolute paths reduced to their file names. */
function showArgs(args) {
  return args.map((a) => a.replace(/(?:\/[^\s:=,]+)+\/([^\s/:=,]+)/g, '$1'));
}

const mib = (kib) => (kib == null ? null : kib / KiB_PER_MiB);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const ffmpegPath = bundledFfmpeg();
  const cacheDir = join(here, '.cache');
  mkdirSync(cacheDir, { recursive: true });
  const log = (m) => process.stderr.write(`bench: ${m}\n`);

  const ffmpegVersion = execFileSync(ffmpegPath, ['-hide_banner', '-version'], { encoding: 'utf8' }).split('\n')[0];
  let filters;
  const ctx = {
    root,
    cacheDir,
    threads: opts.threads,
    frames: opts.frames,
    ffmpegPath,
    log,
    measure,
    ffmpegFilters: () => (filters ??= execFileSync(ffmpegPath, ['-hide_banner', '-filters'], { encoding: 'utf8' })),
    clip: undefined,

    /** score(reference, distorted, options) in a child process, as a Row. */
    async scoreChild({ name, reference, distorted, options, threads = opts.threads }) {
      const env = { ...process.env, UV_THREADPOOL_SIZE: String(Math.min(1024, threads + 2)), FFMPEG_PATH: ffmpegPath };
      const payload = JSON.stringify({ reference, distorted, options });
      log(`${name} ...`);
      const nativeBuilt = nativeBuild().built;
      const r = await measure(process.execPath, [join(here, 'child/score.mjs'), payload], { env });
      const out = r.code === 0 ? lastJsonLine(r.stdout) : undefined;
      const opt = Object.entries(options).map(([k, v]) => `${k}: ${JSON.stringify(v).replace(/"/g, "'")}`).join(', ');
      const row = {
        suite: undefined,
        name,
        threads,
        command: `score(${showArgs([reference])[0]}, ${showArgs([distorted])[0]}, { ${opt} }), UV_THREADPOOL_SIZE=${env.UV_THREADPOOL_SIZE}`,
        ...rowNumbers(r, out?.frames, out?.maxRssKiB),
        vmaf: out?.pooled?.vmaf ?? null,
        detail: { scoreS: out?.scoreS ?? null, backend: out?.backend ?? null, threadpool: out?.threadpool ?? null, nativeBuilt, processes: r.processes, exit: r.code ?? r.signal },
      };
      if (!out) row.error = tail(r.stderr) || `exit ${r.code ?? r.signal}`;
      return row;
    },

    /** `ffmpeg -hide_banner -nostdin ...args` as a Row; frames are ffmpeg's last frame= count. */
    async ffmpegRow({ name, args, threads }) {
      const argv = ['-hide_banner', '-nostdin', ...args];
      log(`${name} ...`);
      const r = await measure(ffmpegPath, argv);
      const counts = [...r.stderr.matchAll(/frame=\s*(\d+)/g)];
      const frames = counts.length ? Number(counts.at(-1)[1]) : null;
      const row = {
        suite: undefined,
        name,
        threads,
        command: ['ffmpeg', ...showArgs(args)].join(' '),
        ...rowNumbers(r, frames, null),
        vmaf: null,
        detail: { argv: [ffmpegPath, ...argv], stderrTail: tail(r.stderr, 2000), processes: r.processes, exit: r.code ?? r.signal },
      };
      if (r.code !== 0) row.error = tail(r.stderr) || `exit ${r.code ?? r.signal}`;
      return row;
    },
  };

  const chosen = SUITES.filter((s) => !opts.only || opts.only.includes(s.name));
  ctx.clip = prepareClip({ ffmpegPath, cacheDir, frames: opts.frames, log });
  const loadBefore = loadavg();

  const device = { cpu: cpuModel(), cores: availableParallelism(), memoryGiB: Math.round(totalmem() / 2 ** 30) };
  const rows = [];
  const skipped = [];
  for (const suite of chosen) {
    const ok = suite.available ? await suite.available(ctx) : true;
    if (ok !== true) {
      skipped.push({ suite: suite.name, reason: String(ok) });
      log(`skipping ${suite.name}: ${ok}`);
      continue;
    }
    if (suite.device) Object.assign(device, await suite.device(ctx));
  }
  const runnable = chosen.filter((s) => !skipped.some((k) => k.suite === s.name));
  const runs = new Map(); // suite/name -> rows of every repeat
  for (let i = 0; i < opts.repeat; i++) {
    if (opts.repeat > 1) log(`run ${i + 1} of ${opts.repeat}`);
    for (const suite of runnable) {
      for (const row of await suite.run(ctx)) {
        const key = `${suite.name}\0${row.name}`;
        if (!runs.has(key)) runs.set(key, []);
        runs.get(key).push({ ...row, suite: suite.name });
      }
    }
  }
  for (const all of runs.values()) rows.push(bestRow(all));

  const report = {
    date: new Date().toISOString(),
    device,
    loadavg: { before: loadBefore.map(round2), after: loadavg().map(round2) },
    node: process.version,
    ffmpeg: { path: relative(root, ffmpegPath), version: ffmpegVersion },
    native: nativeBuild(),
    clip: { description: clipDescription(ctx.clip), width: ctx.clip.width, height: ctx.clip.height, frames: opts.frames, sizesMiB: ctx.clip.sizesMiB, dir: relative(root, ctx.clip.dir) },
    threads: opts.threads,
    repeat: opts.repeat,
    command: `node bench/run.mjs ${process.argv.slice(2).join(' ')}`.trim(),
    suites: chosen.map((s) => ({ name: s.name, title: s.title })),
    skipped,
    rows,
  };
  mkdirSync(join(here, 'results'), { recursive: true });
  writeFileSync(join(here, 'results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : markdown(report));
  if (rows.some((r) => r.error)) process.exitCode = 1;
}

function rowNumbers(r, frames, selfMaxRssKiB) {
  const processKiB = Math.max(r.rootMaxRssKiB ?? 0, selfMaxRssKiB ?? 0) || null;
  return {
    frames: frames ?? null,
    wallS: r.wallS,
    fps: frames ? frames / r.wallS : null,
    maxRssMiB: mib(processKiB),
    treeRssMiB: mib(r.peakTreeRssKiB),
    cpuCores: r.cpuS == null ? null : r.cpuS / r.wallS,
    otherCores: r.otherCores,
  };
}

/** The fastest run (a failed run wins: failures are not hidden), with every run's fps. */
function bestRow(all) {
  const failed = all.find((r) => r.error);
  if (failed) return failed;
  const best = all.reduce((a, b) => (b.wallS < a.wallS ? b : a));
  return all.length === 1 ? best : { ...best, fpsRuns: all.map((r) => r.fps), wallRuns: all.map((r) => r.wallS), otherCoresRuns: all.map((r) => r.otherCores) };
}

function lastJsonLine(text) {
  const line = text.trim().split('\n').at(-1);
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

const tail = (text, n = 600) => text.trim().slice(-n);
const round2 = (x) => Math.round(x * 100) / 100;

function markdown(report) {
  const f = (x, digits) => (x == null ? '–' : x.toFixed(digits));
  const cell = (s) => String(s).replace(/\|/g, '\\|');
  const lines = [];
  const d = report.device;
  const extra = Object.entries(d).filter(([k]) => !['cpu', 'cores', 'memoryGiB'].includes(k)).map(([k, v]) => `, ${k}: ${v}`).join('');
  lines.push('## vmaf-stream bench', '');
  lines.push(`- device: ${d.cpu}, ${d.cores} cores, ${d.memoryGiB} GiB${extra}`);
  lines.push(`- load average (1/5/15 min): ${report.loadavg.before.join(' ')} before, ${report.loadavg.after.join(' ')} after`);
  lines.push(`- clip: ${report.clip.description}`);
  lines.push(`- threads: ${report.threads}${report.repeat > 1 ? `; every row is the fastest of ${report.repeat} runs (fps of all runs in brackets)` : ''}`);
  lines.push(`- node ${report.node}; ${report.ffmpeg.version}`);
  if (report.native.newerSources?.length) lines.push(`- note: the native addon (built ${report.native.built}) is older than src/kernels/cpu/${report.native.newerSources.join(', ')}`);
  lines.push(`- command: \`${report.command}\``, '');
  lines.push('| measurement | threads | fps | wall s | max RSS MiB | tree RSS MiB | CPU cores busy | other load | pooled VMAF | command |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const r of report.rows) {
    lines.push(
      `| ${cell(r.name)}${r.error ? ' (FAILED)' : ''} | ${r.threads ?? 'auto'} | ${f(r.fps, 2)}${r.fpsRuns ? ` [${r.fpsRuns.map((x) => f(x, 1)).join(', ')}]` : ''} | ${f(r.wallS, 2)} | ${f(r.maxRssMiB, 0)} | ${f(r.treeRssMiB, 0)} | ${f(r.cpuCores, 2)} | ${f(r.otherCores, 2)} | ${f(r.vmaf, 4)} | \`${cell(r.command)}\` |`,
    );
  }
  lines.push('');
  lines.push('fps: frames / wall seconds of the measurement\'s child process, start-up included. max RSS: the measured process\'s peak;');
  lines.push('tree RSS: the peak sum over it and its children (our ffmpeg decoders), sampled every 20 ms. CPU cores busy: its CPU seconds / wall seconds.');
  lines.push("other load: cores kept busy by everything else on the machine meanwhile; much above 0 and the row's timing is not fair.");
  const busy = report.rows.filter((r) => (r.otherCores ?? 0) > OTHER_LOAD_WARNING);
  if (busy.length) {
    lines.push('', `**warning**: ${busy.map((r) => r.name).join('; ')} ran beside other work (> ${OTHER_LOAD_WARNING} cores): rerun on a quiet machine.`);
  }
  for (const s of report.skipped) lines.push(`- skipped ${s.suite}: ${s.reason}`);
  for (const r of report.rows.filter((r) => r.error)) lines.push(`- ${r.name} failed: ${r.error.replace(/\s+/g, ' ')}`);
  return `${lines.join('\n')}\n`;
}

main().catch((err) => {
  process.stderr.write(`bench: ${err?.stack ?? err}\n`);
  process.exit(1);
});
