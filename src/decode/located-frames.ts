/**
 * Located frames: frames of a regular file whose samples stay in the file until the one
 * stage that needs them reads them. A gpu run would otherwise move each plane twice on the
 * host (the file into a pool slot, the slot into the GPU's mapped staging memory); located,
 * the reader only skips the frame's bytes (checking that the file holds them), and the gpu
 * backend's upload reads them from the file straight into staging memory, on the thread
 * that owns it (LocatedFileReader).
 *
 * A located frame's planes are empty views (of a shared, empty buffer, so that it crosses
 * to the gpu thread as any pooled frame does): a stage that reads samples and does not know
 * located frames fails on their size rather than computing on nothing. A run asks for
 * located frames (locateFrames) only when its backend says every reader of samples reads
 * them (FeatureBackend.readsLocatedFrames) and nothing on the host looks at the samples
 * (alignment, drift monitors, depth widening).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { read as readFd } from 'node:fs';

import { InputError } from '../errors.js';
import type { Frame, FrameFormat, FrameLocation, FrameSource, Plane } from '../types.js';
import { frameLayout } from './frame-layout.js';

const EMPTY = new SharedArrayBuffer(0);
const EMPTY_8 = new Uint8Array(EMPTY);
const EMPTY_16 = new Uint16Array(EMPTY);

/** A located frame: empty planes (chroma too where the run reads it), its place in the file. */
export function locatedFrame(index: number, format: FrameFormat, pts: number | undefined, located: FrameLocation, chroma: boolean): Frame {
  const empty: Plane = format.bitDepth > 8 ? EMPTY_16 : EMPTY_8;
  const frame: Frame = { index, format, luma: empty, located, release() {} };
  if (chroma) frame.chroma = [empty, empty];
  if (pts !== undefined) frame.pts = pts;
  return frame;
}

/** VMAF_STREAM_LOCATED=0 (for measurements, or a file system where positional reads misbehave): frames are read as before. */
export function locatedFramesAllowed(): boolean {
  return !/^(0|false|no)$/i.test(process.env.VMAF_STREAM_LOCATED ?? '');
}

/** A source that can give located frames: the native readers (StreamFrameSource). */
interface Locatable {
  locateFrames(): void;
}

/** Asks `source` for located frames where it can give them (a native reader of a regular file); others are as they were. */
export function locateFrames(source: FrameSource): void {
  const locatable = source as FrameSource & Partial<Locatable>;
  if (typeof locatable.locateFrames === 'function') locatable.locateFrames();
}

/** Where plane `p` (0 luma, 1 Cb, 2 Cr) of a located frame starts, from the frame's offset. */
export function planeOffsetInFile(format: FrameFormat, p: number): number {
  const layout = frameLayout(format);
  return p === 0 ? 0 : layout.lumaBytes + (p - 1) * layout.chromaBytes;
}

/**
 * Reads located frames' planes, each file opened once (and checked to be the file its
 * reader opened), by positional reads on libuv's pool straight into the caller's memory.
 */
export class LocatedFileReader {
  readonly #files = new Map<string, Promise<FileHandle>>();
  #closed = false;

  /** Fills `dst` with plane `p` of frame `index`, located at `at`; an InputError names the input and frame when the file no longer holds it. */
  async readPlane(at: FrameLocation, format: FrameFormat, p: number, index: number, dst: Uint8Array): Promise<void> {
    const handle = await this.#handle(at, index);
    let position = at.offset + planeOffsetInFile(format, p);
    let done = 0;
    while (done < dst.byteLength) {
      let n: number;
      try {
        n = await readAt(handle.fd, dst, done, dst.byteLength - done, position);
      } catch (cause) {
        throw new InputError('E_INPUT_NOT_FOUND', at.label, `cannot be read: ${(cause as Error).message}`, index, { cause });
      }
      if (n === 0) {
        throw new InputError('E_INPUT_TRUNCATED', at.label, `truncated: the file ended while this frame was read (${dst.byteLength - done} bytes missing: was it cut short during the run?)`, index);
      }
      done += n;
      position += n;
    }
  }

  /** Closes the files (once reads in flight are over: the caller waits for them first). */
  async close(): Promise<void> {
    this.#closed = true;
    const files = [...this.#files.values()];
    this.#files.clear();
    await Promise.all(files.map((f) => f.then((h) => h.close(), () => undefined).catch(() => undefined)));
  }

  #handle(at: FrameLocation, index: number): Promise<FileHandle> {
    if (this.#closed) return Promise.reject(new InputError('E_INPUT_NOT_FOUND', at.label, 'read after the run closed its files', index));
    let file = this.#files.get(at.path);
    if (!file) {
      file = (async () => {
        let handle: FileHandle;
        try {
          handle = await open(at.path, 'r');
        } catch (cause) {
          throw new InputError('E_INPUT_NOT_FOUND', at.label, `cannot be opened again to read its frames: ${(cause as Error).message}`, index, { cause });
        }
        const info = await handle.stat().catch(async (cause: unknown) => {
          await handle.close();
          throw new InputError('E_INPUT_NOT_FOUND', at.label, `cannot be read: ${(cause as Error).message}`, index, { cause });
        });
        if (info.dev !== at.dev || info.ino !== at.ino) {
          await handle.close();
          throw new InputError('E_INPUT_MISMATCH', at.label, 'is no longer the file the run opened (replaced during the run): its frames cannot be read', index);
        }
        return handle;
      })();
      this.#files.set(at.path, file);
    }
    return file;
  }
}

function readAt(fd: number, dst: Uint8Array, at: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => readFd(fd, dst, at, length, position, (error, n) => (error ? reject(error) : resolve(n))));
}
