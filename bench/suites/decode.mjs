// Decoding alone: both mp4 inputs in one ffmpeg process, frames thrown away. With the
// decoders' default (automatic) threading, as when the library spawns them. The ceiling
// for any end-to-end measurement from these files.
export default {
  name: 'decode',
  title: 'ffmpeg decode only (both inputs), the decode-bound ceiling',
  async run(ctx) {
    const { clip } = ctx;
    const args = ['-i', clip.disMp4, '-i', clip.refMp4, '-map', '0:v', '-f', 'null', '-', '-map', '1:v', '-f', 'null', '-'];
    return [await ctx.ffmpegRow({ name: 'ffmpeg decode only, both mp4', args, threads: null })];
  },
};
