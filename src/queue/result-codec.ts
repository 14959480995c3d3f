/**
 * Per-frame results as they cross Redis: lossless. JSON numbers round-trip every finite
 * double exactly (JSON.stringify writes the shortest text that parses back to the same
 * bits), but not -0, NaN or ±Infinity, which a libvmaf log prints differently (`-0.000000`,
 * `nan`, `inf`): those travel as strings. Feature and score keys keep their order (a log
 * lists them in insertion order), written once per segment rather than once per frame.
 */
import type { FrameResult } from '../pipeline/writers/types.js';

/** One frame: [index, refPts, disPts, ...feature values, ...score values]; a missing pts is null. */
type EncodedFrame = Array<number | string | null>;

/** A segment's frames for one rendition. */
export interface EncodedFrames {
  /** Key lists, one per distinct key order met, referenced by each frame. */
  layouts: Array<{ features: string[]; scores: string[] }>;
  /** Per frame: its layout's position, then the EncodedFrame. */
  frames: Array<[number, EncodedFrame]>;
}

function encodeNumber(value: number): number | string {
  return Number.isFinite(value) && !Object.is(value, -0) ? value : String(Object.is(value, -0) ? '-0' : value);
}

function decodeNumber(value: number | string | null): number {
  if (typeof value === 'number') return value;
  if (value === '-0') return -0;
  if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') return Number(value);
  throw new TypeError(`not an encoded number: ${JSON.stringify(value)}`);
}

export function encodeFrames(results: readonly FrameResult[]): EncodedFrames {
  const layouts: EncodedFrames['layouts'] = [];
  const byKey = new Map<string, number>();
  const frames: EncodedFrames['frames'] = results.map((r) => {
    const features = Object.keys(r.features);
    const scores = Object.keys(r.scores);
    const key = `${features.join(',')}|${scores.join(',')}`;
    let layout = byKey.get(key);
    if (layout === undefined) {
      layout = layouts.length;
      layouts.push({ features, scores });
      byKey.set(key, layout);
    }
    const row: EncodedFrame = [r.index, r.refPts === undefined ? null : encodeNumber(r.refPts), r.disPts === undefined ? null : encodeNumber(r.disPts)];
    for (const name of features) row.push(encodeNumber(r.features[name]!));
    for (const name of scores) row.push(encodeNumber(r.scores[name]!));
    return [layout, row];
  });
  return { layouts, frames };
}

export function decodeFrames(encoded: EncodedFrames): FrameResult[] {
  return encoded.frames.map(([layoutAt, row]) => {
    const layout = encoded.layouts[layoutAt]!;
    const result: FrameResult = { index: row[0] as number, features: {}, scores: {} };
    let at = 3;
    for (const name of layout.features) result.features[name] = decodeNumber(row[at++]!);
    for (const name of layout.scores) result.scores[name] = decodeNumber(row[at++]!);
    // Same property order as the pipeline's own results (index, features, scores, refPts, disPts).
    if (row[1] !== null) result.refPts = decodeNumber(row[1]!);
    if (row[2] !== null) result.disPts = decodeNumber(row[2]!);
    return result;
  });
}
