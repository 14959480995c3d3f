// A FrameSource wrapper for the tests of frame ownership (align, ladder).

/**
 * Wraps a FrameSource to count, in `stats`, the frames read, released, released more than
 * once (doubleReleases: the wrapper does not pass those on), out at once (out, and its
 * high-water mark maxOut); stats.label is the source's label, for messages.
 */
export function countingSource(source) {
  const stats = { read: 0, released: 0, doubleReleases: 0, out: 0, maxOut: 0, label: source.label };
  const wrapped = {
    label: source.label,
    format: () => source.format(),
    close: () => source.close(),
    [Symbol.asyncIterator]() {
      const inner = source[Symbol.asyncIterator]();
      return {
        next: async () => {
          const step = await inner.next();
          if (step.done) return step;
          const frame = step.value;
          stats.read++;
          stats.out++;
          stats.maxOut = Math.max(stats.maxOut, stats.out);
          let released = false;
          return {
            done: false,
            value: {
              ...frame,
              release() {
                if (released) {
                  stats.doubleReleases++;
                  return;
                }
                released = true;
                stats.released++;
                stats.out--;
                frame.release();
              },
            },
          };
        },
        return: (v) => inner.return?.(v) ?? Promise.resolve({ done: true, value: undefined }),
      };
    },
  };
  return { source: wrapped, stats };
}
