/**
 * A worker's `--allow DIR|PROTO` list: the inputs (and model files) it agrees to read. A
 * directory allows the files below it (resolved, so `..` and symbolic links cannot lead
 * out of it); a protocol (`https:`, `s3://`) allows URLs of that scheme. An empty list
 * allows everything.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';

export interface AllowList {
  dirs: string[];
  protocols: string[];
}

export function parseAllow(entries: readonly string[]): AllowList {
  const dirs: string[] = [];
  const protocols: string[] = [];
  for (const entry of entries) {
    // `https:` or `s3://` is a protocol; anything else a directory.
    if (/^[a-z][a-z0-9+.-]+:(\/\/)?$/i.test(entry)) {
      protocols.push(entry.replace(/:(\/\/)?$/, '').toLowerCase());
    } else {
      dirs.push(path.resolve(entry));
    }
  }
  return { dirs, protocols };
}

/** Why `input` is refused, or undefined when it is allowed. */
export async function refusal(allow: AllowList, input: string): Promise<string | undefined> {
  if (allow.dirs.length === 0 && allow.protocols.length === 0) return undefined;
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(input)?.[1];
  if (scheme && scheme.toLowerCase() !== 'file' && !(process.platform === 'win32' && scheme.length === 1)) {
    if (allow.protocols.includes(scheme.toLowerCase())) return undefined;
    return `${input}: this worker does not read ${scheme}: URLs (--allow ${[...allow.dirs, ...allow.protocols.map((p) => `${p}:`)].join(' --allow ')})`;
  }
  const file = scheme ? input.slice(scheme.length + 1) : input;
  let real: string;
  try {
    real = await realpath(path.resolve(file));
  } catch {
    real = path.resolve(file);
  }
  for (const dir of allow.dirs) {
    let root = dir;
    try {
      root = await realpath(dir);
    } catch {
      // a directory that does not exist allows nothing real, but compare as given
    }
    if (real === root || real.startsWith(root.endsWith(path.sep) ? root : root + path.sep)) return undefined;
  }
  return `${input}: outside the directories this worker may read (--allow ${allow.dirs.join(' --allow ')})`;
}
