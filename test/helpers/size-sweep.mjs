// The size sweep: every registered extractor, alone, on frames from its minimum size to
// minimum + 40 in width and in height (odd and even), at 8, 10 and 12 bits in 4:2:0, 4:2:2
// and 4:4:4, through the library (score) on the cpu backend and, where asked, the gpu
// backend: each run gives values (the same on both backends: the cpu backend is the oracle)
// or, below the minimum only, a VmafError that says the frames are too small. Used by
// test/size-sweep.test.mjs (a sampled subset) and scripts/fuzz.mjs --sweep (all of it).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng, y4mFile } from './fuzz-cases.mjs';

const dist = await import('../../dist/index.js');
const { EXTRACTORS, extractorByName } = await import('../../dist/extractors/registry.js');
const { resolveOptions } = await import('../../dist/extractors/option.js');

export const EXTRACTOR_NAMES = EXTRACTORS.map((x) => x.name);

/**
 * Whether the extractor's own declaration (its check(), which states libvmaf's refusals)
 * refuses frames of this size and format as too small: the sweep's expectation. Some refuse
 * by one side (cambi: both sides under 216) or by the chroma plane (speed_chroma), so a
 * square minimum alone does not say it.
 */
export function declaredTooSmall(name, { width, height, format, bitDepth }) {
  const def = extractorByName(name);
  if (!def.check) return false;
  try {
    def.check(resolveOptions(name, def.options, new Map(), 'the sweep'), { width, height, bitDepth, chroma: format });
    return false;
  } catch (error) {
    return error?.code === 'E_FRAME_TOO_SMALL';
  }
}
export const FORMATS = ['420', '422', '444'];
export const BIT_DEPTHS = [8, 10, 12];
export const SPAN = 40;

const work = mkdtempSync(join(tmpdir(), 'vmaf-sweep-'));

/** Writes a 2-frame pair of this geometry (the distorted one a noisier copy) and returns the paths. */
function pairFiles(width, height, format, bitDepth) {
  const dir = join(work, `${width}x${height}-${format}-${bitDepth}`);
  const ref = join(dir, 'ref.y4m');
  const dis = join(dir, 'dis.y4m');
  mkdirSync(dir, { recursive: true });
  const g = { width, height, format, bitDepth, frames: 2 };
  writeFileSync(ref, y4mFile(createRng(width * 7919 + height), g));
  writeFileSync(dis, y4mFile(createRng(width * 7919 + height + 1), g));
  return { dir, ref, dis };
}

/** Scores the pair with one extractor; resolves to { frames } or { error }. */
export async function scoreWith(name, { width, height, format, bitDepth }, backend) {
  const { dir, ref, dis } = pairFiles(width, height, format, bitDepth);
  const frames = [];
  try {
    for await (const frame of dist.scoreIterator(ref, dis, { backend, features: [name], noPrediction: true, threads: 2 })) frames.push(frame);
    return { frames };
  } catch (error) {
    return { error };
  } finally {
    // The whole sweep makes thousands of pairs (a gigabyte): each goes once scored.
    rmSync(dir, { recursive: true, force: true });
  }
}

const minimums = new Map();

/**
 * The extractor's smallest square frame side at 8-bit 4:4:4 (found by trying, once): below it
 * the library refuses, from it up every size must work.
 */
export async function minimumSide(name) {
  if (minimums.has(name)) return minimums.get(name);
  let side = 1;
  for (; side <= 256; side++) {
    const r = await scoreWith(name, { width: side, height: side, format: '444', bitDepth: 8 }, 'cpu');
    if (!r.error) break;
    if (!(r.error instanceof dist.VmafError) || !['E_FRAME_TOO_SMALL', 'E_INPUT_FORMAT'].includes(r.error.code)) {
      throw new Error(`${name} at ${side}x${side}: not a clear refusal: ${r.error?.stack ?? r.error}`);
    }
  }
  minimums.set(name, side);
  return side;
}

/**
 * The sweep's cases: { name, width, height, format, bitDepth, belowMinimum } for every
 * extractor. full: every size of both directions with every format and depth; else a
 * sample: the edges (min, min + 1, min + 40), and a few sizes between, each with one
 * format and depth in rotation, plus one size just below the minimum in each direction.
 */
export async function sweepCases({ full = false, extractors = EXTRACTOR_NAMES } = {}) {
  const cases = [];
  for (const name of extractors) {
    const min = await minimumSide(name);
    const shapes = [];
    const offsets = full ? Array.from({ length: SPAN + 1 }, (_, k) => k) : [0, 1, 2, 3, 8, 17, 24, 39, 40];
    for (const k of offsets) {
      shapes.push({ width: min + k, height: min });
      if (k > 0) shapes.push({ width: min, height: min + k });
    }
    let turn = 0;
    for (const shape of shapes) {
      const combos = full ? FORMATS.flatMap((format) => BIT_DEPTHS.map((bitDepth) => ({ format, bitDepth }))) : [{ format: FORMATS[turn % 3], bitDepth: BIT_DEPTHS[Math.floor(turn / 3) % 3] }];
      turn++;
      for (const c of combos) cases.push({ name, ...shape, ...c, belowMinimum: false });
    }
    if (min > 1) {
      cases.push({ name, width: min - 1, height: min, format: '420', bitDepth: 10, belowMinimum: true });
      cases.push({ name, width: min, height: min - 1, format: '444', bitDepth: 12, belowMinimum: true });
    }
  }
  return cases;
}

function label(c) {
  return `${c.name} ${c.width}x${c.height} ${c.format} ${c.bitDepth}-bit`;
}

/**
 * Runs one case on each backend; resolves to null (as it must be) or what went wrong.
 * Some extractors refuse some formats whatever the size (ciede: odd subsampled sizes, as
 * libvmaf): those are clear E_INPUT_FORMAT refusals, accepted when both backends agree.
 */
export async function runSweepCase(c, { backends = ['cpu'] } = {}) {
  const results = [];
  for (const backend of backends) results.push(await scoreWith(c.name, c, backend));
  const [oracle] = results;
  for (const [i, r] of results.entries()) {
    const where = `${label(c)} on ${backends[i]}`;
    if (r.error) {
      if (!(r.error instanceof dist.VmafError)) return `${where}: not a VmafError: ${r.error?.stack ?? r.error}`;
      const refusal = r.error.code === 'E_FRAME_TOO_SMALL' || r.error.code === 'E_INPUT_FORMAT';
      if (!refusal) return `${where}: ${r.error.code}: ${r.error.message}`;
      if (!c.belowMinimum && r.error.code === 'E_FRAME_TOO_SMALL' && !declaredTooSmall(c.name, c)) return `${where}: refused although at or above the minimum: ${r.error.message}`;
      if (!/too small|odd|not supported|refuse|gray|subsampl/i.test(r.error.message)) return `${where}: an unclear refusal: ${r.error.message}`;
      continue;
    }
    if (c.belowMinimum && declaredTooSmall(c.name, c)) return `${where}: scored below its minimum (${r.frames.length} frames)`;
    if (r.frames.some((f) => Object.keys(f.features).length === 0)) return `${where}: a frame without values`;
    if (r.frames.length !== 2) return `${where}: ${r.frames.length} frames scored of 2`;
    for (const frame of r.frames) {
      for (const [k, v] of Object.entries(frame.features)) if (typeof v !== 'number' || Number.isNaN(v)) return `${where}: frame ${frame.index} ${k} = ${v}`;
    }
  }
  for (const [i, r] of results.entries()) {
    if (i === 0) continue;
    if (Boolean(r.error) !== Boolean(oracle.error)) return `${label(c)}: cpu ${oracle.error ? `refused (${oracle.error.message})` : 'scored'}, ${backends[i]} ${r.error ? `refused (${r.error.message})` : 'scored'}`;
    if (r.error) continue;
    for (const [f, frame] of r.frames.entries()) {
      for (const [k, v] of Object.entries(oracle.frames[f].features)) {
        if (!Object.is(frame.features[k], v)) return `${label(c)}: frame ${f} ${k}: cpu ${v}, ${backends[i]} ${frame.features[k]}`;
      }
    }
  }
  return null;
}
