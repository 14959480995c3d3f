// Typed events, as a live QC service would subscribe to them: `frame` for each scored frame,
// `end` with the pooled metrics, `error` with a coded VmafError.
// Run: node examples/events.mjs [REF DIS]   (REF may be '-' to read y4m from standard input)
import { scoreEvents } from 'vmaf-stream';

const [ref = 'examples/media/ref.y4m', dis = 'examples/media/dis.y4m'] = process.argv.slice(2);

scoreEvents(ref === '-' ? process.stdin : ref, dis)
  .on('frame', (frame) => console.log(JSON.stringify({ frame: frame.index, vmaf: frame.scores.vmaf, motion2: frame.features.integer_motion2 })))
  .on('end', (summary) => console.log(`${summary.frameCount} frames, pooled VMAF ${summary.pooled.vmaf.mean.toFixed(4)}`))
  .on('error', (error) => {
    console.error(`${error.code}: ${error.message}`);
    process.exitCode = 1;
  });
