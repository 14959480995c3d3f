/**
 * Loads WGSL sources kept as .wgsl files beside their wrappers (copied from src/ into
 * dist/ by scripts/copy-assets.mjs) and assembles kernels from them.
 *
 * A .wgsl file pulls in a library with a line of its own:
 *
 *     // #include "lib/f64.wgsl"
 *
 * (the path is relative to the including file). Includes are expanded depth first, each
 * file once per shader, dependencies before dependents, so a kernel may include f64.wgsl
 * and i64.wgsl in any order. WGSL declarations are order-independent at module scope,
 * the order only keeps the output readable.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendError } from '../../errors.js';

/** The folder this module (and the .wgsl files, relative to it) lives in: dist/kernels/gpu. */
export const WGSL_ROOT = dirname(fileURLToPath(import.meta.url));

const INCLUDE = /^[ \t]*\/\/[ \t]*#include[ \t]+"([^"]+)"[ \t]*$/;
const cache = new Map<string, string>();

function readSource(absPath: string): string {
  let text = cache.get(absPath);
  if (text === undefined) {
    try {
      text = readFileSync(absPath, 'utf8');
    } catch (cause) {
      throw new BackendError('E_GPU', `cannot read WGSL source ${absPath} (was the build's copy-assets step run?)`, { cause });
    }
    cache.set(absPath, text);
  }
  return text;
}

/** The raw text of one .wgsl file, path relative to WGSL_ROOT (no include expansion). */
export function readWgsl(path: string): string {
  return readSource(join(WGSL_ROOT, path));
}

/**
 * A .wgsl file with its includes expanded, path relative to WGSL_ROOT
 * (e.g. 'reduce-i64.wgsl' or 'lib/f64.wgsl').
 */
export function loadWgsl(path: string): string {
  return expand(join(WGSL_ROOT, path), new Set(), []);
}

/**
 * A shader made of library files (paths relative to WGSL_ROOT, includes expanded and
 * each included once) followed by kernel text, which may itself use // #include lines
 * (resolved relative to WGSL_ROOT).
 */
export function composeWgsl(libs: readonly string[], kernel = ''): string {
  const seen = new Set<string>();
  const parts: string[] = [];
  for (const lib of libs) parts.push(expand(join(WGSL_ROOT, lib), seen, []));
  parts.push(expandText(kernel, WGSL_ROOT, '<kernel>', seen, []));
  return parts.filter((p) => p.length > 0).join('\n');
}

function expand(absPath: string, seen: Set<string>, stack: string[]): string {
  const key = normalize(absPath);
  if (seen.has(key)) return '';
  if (stack.includes(key)) {
    throw new BackendError('E_GPU', `WGSL include cycle: ${[...stack, key].map((p) => relative(WGSL_ROOT, p)).join(' -> ')}`);
  }
  const text = readSource(key);
  const body = expandText(text, dirname(key), key, seen, [...stack, key]);
  seen.add(key);
  return `// ---- ${relative(WGSL_ROOT, key)} ----\n${body}`;
}

function expandText(text: string, dir: string, _name: string, seen: Set<string>, stack: string[]): string {
  // Most sources include nothing: no line-by-line pass over them (kernels are tens of KiB).
  if (!text.includes('#include')) return text;
  const out: string[] = [];
  const deps: string[] = [];
  for (const line of text.split('\n')) {
    const m = INCLUDE.exec(line);
    if (m) deps.push(expand(join(dir, m[1]!), seen, stack));
    else out.push(line);
  }
  return [...deps.filter((d) => d.length > 0), out.join('\n')].join('\n');
}

// ---- literals -------------------------------------------------------------------------

const hex = (n: number): string => `0x${(n >>> 0).toString(16)}u`;

const f32 = new Float32Array(1);
const f32Words = new Uint32Array(f32.buffer);
/** The bits of `x` rounded to a float (the f32.wgsl representation). */
export function f32Bits(x: number): number {
  f32[0] = x;
  return f32Words[0]!;
}

/** The bits of a double as [lo, hi] u32 words (the f64.wgsl representation). */
export function f64Bits(x: number): [number, number] {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x, true);
  return [v.getUint32(0, true), v.getUint32(4, true)];
}

/** A double as a WGSL f64.wgsl constant: `vec2<u32>(0x...u, 0x...u)`, exact. */
export function f64Literal(x: number): string {
  const [lo, hi] = f64Bits(x);
  return `vec2<u32>(${hex(lo)}, ${hex(hi)})`;
}

/** A 64-bit integer (two's complement for negatives) as a WGSL i64.wgsl constant. */
export function i64Literal(x: bigint | number): string {
  const v = BigInt.asUintN(64, BigInt(x));
  return `vec2<u32>(${hex(Number(v & 0xffffffffn))}, ${hex(Number(v >> 32n))})`;
}

/** Reads an i64 stored as (lo, hi) u32 words at word offset `at`. */
export function readI64(words: Uint32Array, at = 0): bigint {
  return BigInt.asIntN(64, (BigInt(words[at + 1]!) << 32n) | BigInt(words[at]!));
}

/** Writes an i64 (lo, hi) at word offset `at`. */
export function writeI64(words: Uint32Array, at: number, x: bigint): void {
  const v = BigInt.asUintN(64, x);
  words[at] = Number(v & 0xffffffffn);
  words[at + 1] = Number(v >> 32n);
}
