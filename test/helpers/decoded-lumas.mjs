// Every frame of an input as the readers give it (any file ffmpeg decodes, y4m, raw), its luma
// plane copied out: for the tests that feed backends directly (gpu-backend, gpu-extractors).
import { openFrameSource } from '../../dist/decode/open-source.js';

/** [{ luma, format, pts }] in order, the source closed. */
export async function decodedLumas(path) {
  const source = openFrameSource(path, { poolSlots: 4 });
  const frames = [];
  try {
    for await (const f of source) {
      frames.push({ luma: f.luma.slice(), format: f.format, pts: f.pts });
      f.release();
    }
  } finally {
    await source.close();
  }
  return frames;
}
