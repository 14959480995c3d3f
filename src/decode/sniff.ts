/**
 * Looks at the first bytes of a stream without losing them: what is read is pushed back
 * (or, at the end of a tiny stream, replayed by a fresh stream).
 */
import { Readable } from 'node:stream';

export interface Sniffed {
  /** Up to the requested number of bytes (fewer only when the stream is shorter). */
  head: Buffer;
  /** The stream to read from now on: the same one, or a replay when it had already ended. */
  stream: Readable;
}

export async function sniffStream(stream: Readable, bytes: number): Promise<Sniffed> {
  const parts: Buffer[] = [];
  let total = 0;
  let ended = false;
  while (total < bytes) {
    const chunk = stream.read() as Buffer | string | null;
    if (chunk !== null) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk;
      parts.push(buf);
      total += buf.length;
      continue;
    }
    if (stream.readableEnded || stream.destroyed) {
      ended = true;
      break;
    }
    await new Promise<void>((resolve, reject) => {
      const onReadable = () => {
        done();
        resolve();
      };
      const done = () => {
        stream.off('readable', onReadable);
        stream.off('end', onEnd);
        stream.off('close', onEnd);
        stream.off('error', onError);
      };
      const onEnd = () => {
        done();
        ended = true;
        resolve();
      };
      const onError = (err: Error) => {
        done();
        reject(err);
      };
      stream.on('readable', onReadable);
      stream.once('end', onEnd);
      stream.once('close', onEnd);
      stream.once('error', onError);
    });
    if (ended) break;
  }
  const all = Buffer.concat(parts);
  if (ended) {
    // unshift() after 'end' is an error: replay what was read in a new stream.
    return { head: all.subarray(0, bytes), stream: Readable.from(all.length ? [all] : [], { objectMode: false }) };
  }
  if (all.length > 0) stream.unshift(all);
  return { head: all.subarray(0, bytes), stream };
}
