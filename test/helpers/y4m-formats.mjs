// Small synthetic y4m files for extractor tests: a gray (mono) clip at any depth, and a
// 4:2:0 8-bit pair whose distorted picture differs from the reference by a chosen amount.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeRng } from './gpu.mjs';

/** A 2-frame mono y4m of noise at `bitDepth`. */
export function writeGray(file, width, height, bitDepth) {
  const rng = makeRng(3);
  const tag = bitDepth === 8 ? 'mono' : `mono${bitDepth}`;
  const parts = [Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C${tag}\n`, 'latin1')];
  for (let f = 0; f < 2; f++) {
    const plane = bitDepth === 8 ? new Uint8Array(width * height) : new Uint16Array(width * height);
    for (let i = 0; i < plane.length; i++) plane[i] = Math.floor(rng.float() * (1 << bitDepth));
    parts.push(Buffer.from('FRAME\n', 'latin1'), Buffer.from(plane.buffer));
  }
  writeFileSync(file, Buffer.concat(parts));
  return file;
}

/**
 * A 1-frame 4:2:0 pair at `bitDepth` (8 or 16): noise within the legal range, the distorted
 * copy with ±`lumaError` on luma and ±`chromaError` on chroma (scaled to the depth).
 */
export function writeY4mPair(dir, name, { width, height, seed, lumaError = 0, chromaError = 0, bitDepth = 8 }) {
  const rng = makeRng(seed);
  const cw = Math.ceil(width / 2);
  const ch = Math.ceil(height / 2);
  const n = width * height + 2 * cw * ch;
  const scale = 1 << (bitDepth - 8);
  const Samples = bitDepth === 8 ? Uint8Array : Uint16Array;
  const ref = new Samples(n);
  const dis = new Samples(n);
  for (let i = 0; i < n; i++) {
    const luma = i < width * height;
    const v = 32 + Math.floor(rng.float() * 192);
    const e = (luma ? lumaError : chromaError) * (rng.float() < 0.5 ? -1 : 1);
    ref[i] = v * scale;
    dis[i] = (v + e) * scale;
  }
  const tag = bitDepth === 8 ? '420' : `420p${bitDepth}`;
  const write = (file, samples) => {
    writeFileSync(file, Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C${tag}\nFRAME\n`, 'latin1'), Buffer.from(samples.buffer)]));
    return file;
  };
  return { ref: write(join(dir, `${name}-ref.y4m`), ref), dis: write(join(dir, `${name}-dis.y4m`), dis) };
}
