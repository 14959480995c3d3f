/**
 * A frame with several readers, counted: it starts with one (the arrival's), each reader
 * takes one (retain, or a view whose release gives it back), and the original is released
 * when the count drops to 0. The plan backend shares a group's frames between the core, the
 * native jobs and the temporal history; the warm start between the cpu and gpu backends.
 */
import type { Frame } from '../types.js';

export class SharedFrame {
  private count = 1;
  constructor(readonly frame: Frame) {}
  retain(): this {
    this.count++;
    return this;
  }
  release(): void {
    if (--this.count === 0) this.frame.release();
  }
  /** A view of the frame whose release() gives back the reference taken for it (once). */
  view(): Frame {
    this.retain();
    let released = false;
    return Object.create(this.frame, {
      release: {
        value: () => {
          if (released) return;
          released = true;
          this.release();
        },
      },
    }) as Frame;
  }
}
