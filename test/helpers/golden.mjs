// Golden clips: reference/distorted pairs with libvmaf 3.2.0's logs for them. The
// repository carries a set in test/fixtures/golden (README.md there says what and whence);
// the team's larger set in ../shared/golden is optional extra coverage (env.mjs).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fixturesGoldenDir, sharedGoldenDir } from './env.mjs';

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
    if (!this.logs.has(kind)) this.logs.set(kind, JSON.parse(this.logText(kind)));
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
