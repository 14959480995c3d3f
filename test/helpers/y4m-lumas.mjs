// The luma planes of an 8-bit 4:2:0 y4m file, for the tests that feed kernels and backends
// directly (cpu-backend, gpu-adm, gpu-vif).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

/** { width, height, lumas: Uint8Array[] }, every frame's luma plane copied out, in order. */
export function readY4mLumas(path) {
  const data = readFileSync(path);
  const headerEnd = data.indexOf(0x0a);
  const header = data.subarray(0, headerEnd).toString('latin1').split(' ');
  assert.equal(header[0], 'YUV4MPEG2', `${path}: not a y4m file`);
  const field = (c) => header.find((t) => t.startsWith(c))?.slice(1);
  const width = Number(field('W'));
  const height = Number(field('H'));
  const chroma = field('C') ?? '420';
  assert.ok(/^420(jpeg|mpeg2|paldv)?$/.test(chroma), `${path}: only 8-bit 4:2:0 here, got C${chroma}`);
  const frameBytes = width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
  const lumas = [];
  let at = headerEnd + 1;
  while (at < data.length) {
    const lineEnd = data.indexOf(0x0a, at);
    assert.equal(data.subarray(at, at + 5).toString('latin1'), 'FRAME');
    at = lineEnd + 1;
    lumas.push(new Uint8Array(data.subarray(at, at + width * height)));
    at += frameBytes;
  }
  return { width, height, lumas };
}
