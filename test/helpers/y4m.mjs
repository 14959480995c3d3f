// 8-bit 4:2:0 y4m clips for the end-to-end tests: split a file into its header and frames,
// write a file of chosen frames (optionally changed on the way).
import { readFileSync, writeFileSync } from 'node:fs';

/** { header, width, height, frames: Buffer[] } (each frame's planes, without the FRAME line). */
export function readY4m(file) {
  const buf = readFileSync(file);
  const eol = buf.indexOf(0x0a);
  const header = buf.subarray(0, eol + 1);
  const tags = header.toString('latin1').trim().split(' ');
  const width = Number(tags.find((t) => t[0] === 'W').slice(1));
  const height = Number(tags.find((t) => t[0] === 'H').slice(1));
  const frameBytes = width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
  const frames = [];
  let pos = eol + 1;
  while (pos < buf.length) {
    const lineEnd = buf.indexOf(0x0a, pos);
    frames.push(buf.subarray(lineEnd + 1, lineEnd + 1 + frameBytes));
    pos = lineEnd + 1 + frameBytes;
  }
  return { header, width, height, frames };
}

/**
 * Writes `file` with the frames of `y4m` at `indices`, in that order; `edit(planes, k, i)`
 * may return a changed copy of the k-th frame written (source frame i).
 */
export function writeY4m(file, y4m, indices, edit) {
  const parts = [y4m.header];
  indices.forEach((i, k) => parts.push(Buffer.from('FRAME\n', 'latin1'), edit?.(Buffer.from(y4m.frames[i]), k, i) ?? y4m.frames[i]));
  writeFileSync(file, Buffer.concat(parts));
  return file;
}

/** Inverts the luma plane of a frame (255 − Y): a badly degraded picture. */
export function negateLuma(y4m) {
  return (planes) => {
    for (let j = 0; j < y4m.width * y4m.height; j++) planes[j] = 255 - planes[j];
    return planes;
  };
}

export const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
