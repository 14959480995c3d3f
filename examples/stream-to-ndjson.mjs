// A Node Readable of results piped through a Transform into NDJSON on standard output:
// the stream honours the consumer's pace, so decoding waits for a slow reader.
// Run: node examples/stream-to-ndjson.mjs [REF DIS] | head -3
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { scoreStream } from 'vmaf-stream';

const [ref = 'examples/media/ref.y4m', dis = 'examples/media/dis.y4m'] = process.argv.slice(2);
const toLine = new Transform({
  writableObjectMode: true,
  transform(frame, _encoding, done) {
    done(null, `${JSON.stringify({ frameNum: frame.index, vmaf: frame.scores.vmaf })}\n`);
  },
});
await pipeline(scoreStream(ref, dis), toLine, process.stdout).catch((error) => {
  if (error.code !== 'EPIPE') throw error;
});
