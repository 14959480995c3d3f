// The cpu backend through the library's score(), `threads` frames at once:
//   y4m  from the decoded y4m files (our native y4m reader; no ffmpeg)
//   mp4  end to end from the H.264 files (two ffmpeg decoders piping y4m into the library)
// and, when threads > 1, y4m again with one thread, to show how the backend scales.
export default {
  name: 'cpu',
  title: "vmaf-stream's cpu backend (score(), backend 'cpu'; vmaf_v0.6.1 features + prediction)",
  async run(ctx) {
    const { clip, threads } = ctx;
    const rows = [];
    const run = async (name, reference, distorted, n) =>
      rows.push(await ctx.scoreChild({ name, reference, distorted, options: { backend: 'cpu', threads: n }, threads: n }));
    await run('vmaf-stream cpu, y4m', clip.refY4m, clip.disY4m, threads);
    await run('vmaf-stream cpu, mp4 (ffmpeg decode)', clip.refMp4, clip.disMp4, threads);
    if (threads > 1) await run('vmaf-stream cpu, y4m, 1 thread (scaling)', clip.refY4m, clip.disY4m, 1);
    return rows;
  },
};
