/**
 * What a gpu run's start-up would otherwise work out the same way on every run, kept in files
 * between runs: each kernel's pruned WGSL (wgsl-prune.ts: tens of milliseconds of a run's
 * start-up, on the thread that then waits for its pipelines) and the f32 probe's verdict for an
 * adapter and driver (f32-probe.ts: a shader module and a dispatch before the first float
 * kernel's frame).
 *
 * An entry is found by the SHA-256 of everything its value depends on (the key), and its first
 * line is the SHA-256 of that digest and the value together: a truncated, damaged or misplaced
 * file does not match and is computed again, never used. The folder is the user's own: VMAF_STREAM_CACHE_DIR,
 * or vmaf-stream-cache-<uid> in the temporary folder (as Node's own compile cache), created
 * private (0700); a folder owned by another user, or that others may write to, is not used (a
 * planted entry could change the kernels a run compiles). VMAF_STREAM_CACHE=0 turns it off.
 * Any failure to read or write just computes the value: the cache never fails a run. The
 * folder holds at most MAX_ENTRIES entries (a few MiB): past that, the first entry a process
 * keeps removes the oldest written (another release's kernels, mostly).
 */
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { pruneWgsl } from './wgsl-prune.js';

/** The cache's folder, null where there is none to use; looked up once per thread. */
let folder: string | null | undefined;

/** Where this process keeps its start-up cache, or null where it keeps none (off, or a folder it may not trust). */
export function startupCacheDir(): string | null {
  if (folder !== undefined) return folder;
  folder = null;
  if (/^(0|false|no|off)$/i.test(process.env.VMAF_STREAM_CACHE ?? '')) return folder;
  const uid = process.getuid?.();
  const path = process.env.VMAF_STREAM_CACHE_DIR || join(tmpdir(), `vmaf-stream-cache-${uid ?? 'user'}`);
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const st = lstatSync(path);
    if (st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0) folder = path;
  } catch {
    // no folder to keep it in: every value is computed
  }
  return folder;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Where `key`'s entry of `kind` lives (its name's prefix) and the line that checks its value. */
interface Entry {
  file: string;
  check(value: string): string;
}

/** `key`'s entry in `dir`: the key, often a kernel's whole source, is hashed once for both. */
function entryOf(dir: string, kind: string, key: string): Entry {
  const digest = sha256(key);
  return { file: join(dir, `${kind}-${digest.slice(0, 40)}`), check: (value) => sha256(`${digest}\0${value}`) };
}

/** The value kept in `entry`, or undefined (none, or one that does not check). */
function readEntry(entry: Entry): string | undefined {
  try {
    const text = readFileSync(entry.file, 'utf8');
    const value = text.slice(65);
    if (text[64] === '\n' && text.slice(0, 64) === entry.check(value)) return value;
  } catch {
    // not there yet, or unreadable
  }
  return undefined;
}

/** The value an earlier run kept for `key`, or undefined (none, off, or an entry that does not check). */
export function keptValue(kind: string, key: string): string | undefined {
  const dir = startupCacheDir();
  return dir === null ? undefined : readEntry(entryOf(dir, kind, key));
}

/** The most entries the folder keeps (an entry is a kernel's text or a verdict: 0.1 to 30 KiB). */
export const MAX_ENTRIES = 1000;
/** Whether this thread has bounded the folder yet (once, at its first new entry). */
let bounded = false;

/**
 * Removes the oldest-written entries past MAX_ENTRIES (down to three quarters of it), and side
 * files an interrupted write left behind (over an hour old).
 */
function boundFolder(dir: string): void {
  const now = Date.now();
  const entries: Array<{ path: string; written: number }> = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    try {
      const written = statSync(path).mtimeMs;
      if (name.endsWith('.partial')) {
        if (now - written > 3_600_000) unlinkSync(path);
      } else {
        entries.push({ path, written });
      }
    } catch {
      // removed meanwhile by another run
    }
  }
  if (entries.length <= MAX_ENTRIES) return;
  entries.sort((a, b) => a.written - b.written);
  for (const { path } of entries.slice(0, entries.length - Math.floor(MAX_ENTRIES * 0.75))) {
    try {
      unlinkSync(path);
    } catch {
      // removed meanwhile by another run
    }
  }
}

/** Keeps `value` for `key`, for later runs (where there is a cache). */
export function keepValue(kind: string, key: string, value: string): void {
  const dir = startupCacheDir();
  if (dir !== null) writeEntry(dir, entryOf(dir, kind, key), value);
}

/** Writes `value` into `entry` (bounding the folder first, once per thread). */
function writeEntry(dir: string, entry: Entry, value: string): void {
  if (!bounded) {
    bounded = true;
    try {
      boundFolder(dir);
    } catch {
      // an unreadable folder: entries are written as before
    }
  }
  const partial = `${entry.file}.${process.pid}-${threadId}.partial`;
  try {
    // Written aside and renamed: a run reading it meanwhile sees the old entry or the whole new one.
    writeFileSync(partial, `${entry.check(value)}\n${value}`, { mode: 0o600 });
    renameSync(partial, entry.file);
  } catch {
    // kept next time, perhaps
  }
}

/**
 * The value `compute` gives for `key`: kept by an earlier run, or computed and kept. `compute`
 * must depend on nothing but `key`.
 */
export function cachedValue(kind: string, key: string, compute: () => string): string {
  const dir = startupCacheDir();
  if (dir === null) return compute();
  const entry = entryOf(dir, kind, key);
  const kept = readEntry(entry);
  if (kept !== undefined) return kept;
  const value = compute();
  writeEntry(dir, entry, value);
  return value;
}

/** The SHA-256 of a file's bytes (hex), or undefined where it cannot be read. */
export function fileDigest(path: string): string | undefined {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch {
    return undefined;
  }
}

/** The pruner's own compiled code: an entry pruned by another version of it is another key. */
let pruner: string | null | undefined;

/** pruneWgsl(code, entryPoint, constants), kept between runs. */
export function cachedPruneWgsl(code: string, entryPoint: string, constants: readonly string[] = []): string {
  pruner ??= fileDigest(fileURLToPath(new URL('./wgsl-prune.js', import.meta.url))) ?? null;
  if (pruner === null) return pruneWgsl(code, entryPoint, constants);
  return cachedValue('wgsl', [pruner, entryPoint, constants.join(','), code].join('\0'), () => pruneWgsl(code, entryPoint, constants));
}

/** Forgets the folder looked up (tests change VMAF_STREAM_CACHE and VMAF_STREAM_CACHE_DIR between cases). */
export function resetStartupCacheForTest(): void {
  folder = undefined;
  bounded = false;
}
