// A 10-bit 4:2:2 y4m built from an 8-bit 4:2:0 one, in JavaScript (bit for bit the same
// everywhere, unlike a scaler): samples widened (<< 2), each chroma row followed by the
// mean of it and the next (so chroma rows differ row to row, as 4:2:2 chroma does).
import { writeFileSync } from 'node:fs';
import { readY4m } from './y4m.mjs';

export function write10bit422(source, target, frameCount) {
  const y4m = readY4m(source);
  const { width, height } = y4m;
  const cw = Math.ceil(width / 2);
  const ch = Math.ceil(height / 2);
  const header = `YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C422p10 XYSCSS=422P10\n`;
  const parts = [Buffer.from(header, 'latin1')];
  for (const frame of y4m.frames.slice(0, frameCount)) {
    const out = new Uint16Array(width * height + 2 * cw * height);
    for (let i = 0; i < width * height; i++) out[i] = frame[i] << 2;
    for (let p = 0; p < 2; p++) {
      const src = width * height + p * cw * ch;
      const dst = width * height + p * cw * height;
      for (let r = 0; r < height; r++) {
        const a = Math.floor(r / 2);
        const b = r % 2 === 0 ? a : Math.min(a + 1, ch - 1);
        for (let x = 0; x < cw; x++) out[dst + r * cw + x] = (frame[src + a * cw + x] + frame[src + b * cw + x]) << 1;
      }
    }
    parts.push(Buffer.from('FRAME\n', 'latin1'), Buffer.from(out.buffer));
  }
  writeFileSync(target, Buffer.concat(parts));
  return target;
}
