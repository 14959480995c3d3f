// A live source for the tests: writes a y4m stream into a path (a named pipe) frame by
// frame, and says on stdout what it did and when: `wrote <i>` once frame i is handed to
// the pipe (its write has completed, so a full pipe holds the writer back), `closed` at the end.
//
//   node fifo-writer.mjs <fifo> file <clip.y4m> <frames> <pauseMs>    frames of a y4m file
//   node fifo-writer.mjs <fifo> synth <WxH> <frames> <pauseMs>       a moving gradient
import { createWriteStream, readFileSync } from 'node:fs';

const [fifo, mode, what, framesArg, pauseArg] = process.argv.slice(2);
const frames = Number(framesArg);
const pause = Number(pauseArg);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let header;
let frameAt;
if (mode === 'file') {
  const data = readFileSync(what);
  const headerEnd = data.indexOf(0x0a) + 1;
  header = data.subarray(0, headerEnd);
  const fields = header.toString('latin1').trim().split(' ');
  const width = Number(fields.find((f) => f.startsWith('W')).slice(1));
  const height = Number(fields.find((f) => f.startsWith('H')).slice(1));
  const frameBytes = 'FRAME\n'.length + width * height * 3 / 2; // 8-bit 4:2:0
  frameAt = (i) => data.subarray(headerEnd + i * frameBytes, headerEnd + (i + 1) * frameBytes);
} else {
  const [width, height] = what.split('x').map(Number);
  header = Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C420jpeg\n`, 'latin1');
  frameAt = (i) => {
    const buf = Buffer.alloc('FRAME\n'.length + width * height * 3 / 2, 128);
    buf.write('FRAME\n', 0, 'latin1');
    const luma = buf.subarray('FRAME\n'.length);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) luma[y * width + x] = (x + 2 * y + 3 * i + ((x * y) >> 7)) & 255;
    }
    return buf;
  };
}

const out = createWriteStream(fifo);
const write = (chunk) => new Promise((resolve, reject) => out.write(chunk, (error) => (error ? reject(error) : resolve())));
await write(header);
for (let i = 0; i < frames; i++) {
  await write(frameAt(i));
  process.stdout.write(`wrote ${i}\n`);
  if (pause > 0 && i < frames - 1) await sleep(pause);
}
await new Promise((resolve) => out.end(resolve));
process.stdout.write('closed\n');
