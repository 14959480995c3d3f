// The bench's suites, run in this order (`--only` picks some by name). A suite is
//
//   {
//     name: 'cpu',                       // for --only, and the `suite` field of its rows
//     title: 'what it measures',
//     available?(ctx) => true | 'why not' // skipped, with the reason printed, when not true
//     device?(ctx) => { gpu: '...' }     // extra fields for the report's device line
//     run(ctx) => Promise<Row[]>
//   }
//
// ctx (see bench/run.mjs): { root, cacheDir, clip, threads, frames, ffmpegPath, log,
// measure(cmd, args, opts), scoreChild({ name, reference, distorted, options, threads }),
// ffmpegRow(...) } — scoreChild runs the library's score() in a child process with
// UV_THREADPOOL_SIZE set, and returns a finished Row, so a gpu suite is a few lines:
//   run: (ctx) => Promise.all([ctx.scoreChild({ name: 'vmaf-stream gpu, y4m', reference: ctx.clip.refY4m,
//          distorted: ctx.clip.disY4m, options: { backend: 'gpu' } })])
// (run its rows one after another, not at once, so they do not share the machine).
//
// A Row: { suite, name, threads, frames, wallS, fps, maxRssMiB, treeRssMiB, cpuCores,
//          vmaf, command, detail }  (numbers may be null when not measured).
import cpu from './cpu.mjs';
import ffmpegLibvmaf from './ffmpeg-libvmaf.mjs';
import decode from './decode.mjs';
import gpu from './gpu.mjs';

export const SUITES = [cpu, ffmpegLibvmaf, decode, gpu];
