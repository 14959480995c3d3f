// Scores a distorted file against its reference and prints each frame's VMAF as it is
// computed, then the pooled scores. Run: node examples/score-files.mjs [REF DIS]
import { score, RunPooling } from 'vmaf-stream';

const [ref = 'examples/media/ref.y4m', dis = 'examples/media/dis.y4m'] = process.argv.slice(2);
const pooling = new RunPooling();

score(ref, dis, { backend: 'cpu' }).subscribe({
  next: (frame) => {
    pooling.add(frame);
    console.log(`frame ${frame.index}: vmaf ${frame.scores.vmaf.toFixed(3)}`);
  },
  error: (error) => {
    console.error(`${error.code ?? 'error'}: ${error.message}`);
    process.exitCode = 1;
  },
  complete: () => {
    const { pooled } = pooling.summary('example');
    console.log(`mean ${pooled.vmaf.mean.toFixed(3)}, harmonic mean ${pooled.vmaf.harmonic_mean.toFixed(3)}, min ${pooled.vmaf.min.toFixed(3)}`);
  },
});
