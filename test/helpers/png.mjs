// A small PNG decoder for tests (8-bit grey, grey+alpha, RGB, RGBA; not interlaced):
// enough to read Chromium's screenshots and look at their pixels.
import { inflateSync } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };

/** Decodes a PNG buffer to { width, height, channels, pixels } (pixels: one byte per channel, row-major). */
export function decodePng(buffer) {
  if (buffer.length < 8 || !buffer.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG file');
  let offset = 8;
  let header;
  const data = [];
  while (offset + 8 <= buffer.length) {
    const length = buffer.readUInt32BE(offset);
    const type = buffer.toString('latin1', offset + 4, offset + 8);
    const body = buffer.subarray(offset + 8, offset + 8 + length);
    offset += 12 + length;
    if (type === 'IHDR') {
      header = {
        width: body.readUInt32BE(0),
        height: body.readUInt32BE(4),
        bitDepth: body[8],
        colorType: body[9],
        interlace: body[12],
      };
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
  }
  if (!header) throw new Error('PNG without IHDR');
  const channels = CHANNELS[header.colorType];
  if (header.bitDepth !== 8 || !channels) throw new Error(`unsupported PNG: bit depth ${header.bitDepth}, colour type ${header.colorType}`);
  if (header.interlace !== 0) throw new Error('interlaced PNG not supported');
  const raw = inflateSync(Buffer.concat(data));
  const { width, height } = header;
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) throw new Error('PNG image data is truncated');
  const pixels = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const out = y * stride;
    const up = out - stride;
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? pixels[out + i - channels] : 0;
      const b = y > 0 ? pixels[up + i] : 0;
      const c = y > 0 && i >= channels ? pixels[up + i - channels] : 0;
      let value;
      switch (filter) {
        case 0: value = line[i]; break;
        case 1: value = line[i] + a; break;
        case 2: value = line[i] + b; break;
        case 3: value = line[i] + ((a + b) >> 1); break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - b);
          const pc = Math.abs(p - c);
          value = line[i] + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
          break;
        }
        default: throw new Error(`bad PNG filter ${filter} on row ${y}`);
      }
      pixels[out + i] = value & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

/** Pixel statistics of a decoded PNG: luma mean and standard deviation, distinct colours, saturated (coloured) pixels. */
export function pixelStats(image, region = { x: 0, y: 0, width: image.width, height: image.height }) {
  const { channels, pixels, width } = image;
  let n = 0;
  let sum = 0;
  let sumSq = 0;
  let saturated = 0;
  const colours = new Set();
  for (let y = region.y; y < region.y + region.height; y++) {
    for (let x = region.x; x < region.x + region.width; x++) {
      const i = (y * width + x) * channels;
      const r = pixels[i];
      const g = channels >= 3 ? pixels[i + 1] : r;
      const b = channels >= 3 ? pixels[i + 2] : r;
      const luma = 0.2126 * r + 0.7152 * g + 0.0722 * b;
      n++;
      sum += luma;
      sumSq += luma * luma;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 96) saturated++;
      if (colours.size < 100000) colours.add((r << 16) | (g << 8) | b);
    }
  }
  const mean = sum / n;
  return { pixels: n, mean, stddev: Math.sqrt(Math.max(0, sumSq / n - mean * mean)), colours: colours.size, saturated };
}
