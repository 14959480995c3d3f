// Golden clips: reference/distorted pairs with libvmaf 3.2.0's logs for them. The
// repository carries a set in test/fixtures/golden (README.md there says what and whence);
// the team's larger set in ../shared/golden is optional extra coverage (env.mjs).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fixturesGoldenDir, sharedGoldenDir } from './env.mjs';

/**
 * The keys of libvmaf-extra logs that depend on the CPU's approximate reciprocal: libvmaf
 * 3.2.0's float ADM divides through SSE's rcpss, whose approximation differs between Intel
 * and AMD (our cpu and gpu backends use the host's own, so they equal the libvmaf of the
 * machine they run on). float_adm's keys and the float models built on them.
 */
export const reciprocalKey = (key) => /^(adm|aim)/.test(key) || key.startsWith('vmaf_float');

/** Whose rcpss the carried logs' reciprocal keys come from: they were made on AMD. */
const LOGS_RECIPROCAL = 'amd';

/** This host's: 'amd', 'intel', or 'other' (no x86 rcpss; float ADM divides exactly). */
export const hostReciprocal = (() => {
  if (process.arch !== 'x64' && process.arch !== 'ia32') return 'other';
  let vendor = '';
  try {
    vendor = /^vendor_id\s*:\s*(\S+)/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '';
  } catch {}
  return vendor === 'AuthenticAMD' ? 'amd' : vendor === 'GenuineIntel' ? 'intel' : 'other';
})();

/**
 * A libvmaf-extra log as libvmaf computes it on this host: its reciprocal keys replaced by
 * the clip's overlay for this host's CPU vendor (libvmaf-extra.rcp-intel.json.gz, made by
 * make-rcp-overlay.mjs from libvmaf 3.2.0 run on that vendor's CPU). Where the clip has no
 * such overlay (../shared/golden's clips), the keys are left out, and said so once.
 */
function forHostReciprocal(log, clip) {
  if (hostReciprocal === LOGS_RECIPROCAL) return log;
  const overlayPath = join(clip.dir, `libvmaf-extra.rcp-${hostReciprocal}.json.gz`);
  const overlay = existsSync(overlayPath) ? JSON.parse(gunzipSync(readFileSync(overlayPath)).toString('utf8')) : null;
  clip.reciprocalKeysLeftOut = !overlay;
  if (!overlay) console.warn(`golden clip ${clip.name}: its float ADM keys come from an AMD CPU's rcpss and this host's is ${hostReciprocal}'s: left out`);
  const adjust = (metrics, replacement) => {
    for (const key of Object.keys(metrics)) {
      if (!reciprocalKey(key)) continue;
      if (!overlay) delete metrics[key];
      else if (replacement && key in replacement) metrics[key] = replacement[key];
      else throw new Error(`golden clip ${clip.name}: ${overlayPath} has no ${key}`);
    }
  };
  log.frames?.forEach((frame, i) => adjust(frame.metrics, overlay?.frames[i]?.metrics));
  if (log.pooled_metrics) adjust(log.pooled_metrics, overlay?.pooled_metrics);
  return log;
}

/** One clip's folder: `ref`/`dis` paths, `info` (clip.json), and its logs, gzipped or not. */
export class GoldenClip {
  constructor(name, dir, origin) {
    this.name = name;
    this.dir = dir;
    /** 'repo' (test/fixtures/golden) or 'shared' (../shared/golden). */
    this.origin = origin;
    const files = readdirSync(dir);
    const pick = (stem) => {
      const file = files.find((f) => f.startsWith(`${stem}.`));
      if (!file) throw new Error(`golden clip ${name}: no ${stem}.* in ${dir}`);
      return join(dir, file);
    };
    this.ref = pick('ref');
    this.dis = pick('dis');
    this.logs = new Map();
    /** True once libvmaf-extra was read without its reciprocal keys (forHostReciprocal). */
    this.reciprocalKeysLeftOut = false;
  }

  /** clip.json: width, height, pix_fmt, scored_as, frames. */
  get info() {
    return JSON.parse(readFileSync(join(this.dir, 'clip.json'), 'utf8'));
  }

  /** Whether libvmaf's log `kind` ('libvmaf', 'libvmaf-extra', 'libvmaf-aom-ctc', 'libvmaf-nflx-ctc') is here. */
  hasLog(kind = 'libvmaf') {
    return existsSync(join(this.dir, `${kind}.json.gz`)) || existsSync(join(this.dir, `${kind}.json`));
  }

  /** The log's text exactly as libvmaf wrote it. */
  logText(kind = 'libvmaf') {
    const gz = join(this.dir, `${kind}.json.gz`);
    if (existsSync(gz)) return gunzipSync(readFileSync(gz)).toString('utf8');
    return readFileSync(join(this.dir, `${kind}.json`), 'utf8');
  }

  /** The log, parsed (cached: treat it as read-only). */
  log(kind = 'libvmaf') {
    if (!this.logs.has(kind)) {
      const log = JSON.parse(this.logText(kind));
      this.logs.set(kind, kind === 'libvmaf-extra' ? forHostReciprocal(log, this) : log);
    }
    return this.logs.get(kind);
  }
}

const clipFolders = (dir) =>
  readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'clip.json')))
    .map((d) => d.name)
    .sort();

const cache = new Map();
function load(name, dir, origin) {
  const key = `${origin}:${name}`;
  if (!cache.has(key)) cache.set(key, new GoldenClip(name, join(dir, name), origin));
  return cache.get(key);
}

/** The names of the clips the repository carries. */
export const carriedClipNames = clipFolders(fixturesGoldenDir);

/** A clip the repository carries, by name. */
export function goldenClip(name) {
  if (!carriedClipNames.includes(name)) throw new Error(`no golden clip ${name} in ${fixturesGoldenDir}`);
  return load(name, fixturesGoldenDir, 'repo');
}

/**
 * Every clip the repository carries, and with `{ shared: true }` also those of
 * ../shared/golden that it does not carry (by name), where that folder exists.
 */
export function goldenClips({ shared = false } = {}) {
  const clips = carriedClipNames.map((name) => load(name, fixturesGoldenDir, 'repo'));
  if (shared && sharedGoldenDir) {
    for (const name of clipFolders(sharedGoldenDir)) {
      if (!carriedClipNames.includes(name)) clips.push(load(name, sharedGoldenDir, 'shared'));
    }
  }
  return clips.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A file of a carried clip, as 'clip/file' (e.g. 'src01_160x90_8bit/ref.y4m'). */
export function goldenFile(clipAndFile) {
  const [name, file] = clipAndFile.split('/');
  const path = join(goldenClip(name).dir, file);
  if (!existsSync(path)) throw new Error(`golden clip ${name} has no ${file}`);
  return path;
}
