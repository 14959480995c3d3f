// A quality gate for an encoding pipeline: iterate the scores and stop at the first frame
// below a threshold (decoding stops too). Run: node examples/quality-gate.mjs [REF DIS THRESHOLD]
import { scoreIterator } from 'vmaf-stream';

const [ref = 'examples/media/ref.y4m', dis = 'examples/media/dis.y4m', threshold = '60'] = process.argv.slice(2);

for await (const frame of scoreIterator(ref, dis, { models: ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg'] })) {
  if (frame.scores.vmaf_neg < Number(threshold)) {
    console.log(`FAIL: frame ${frame.index} has VMAF NEG ${frame.scores.vmaf_neg.toFixed(2)} < ${threshold}`);
    process.exit(1);
  }
}
console.log(`PASS: every frame has VMAF NEG >= ${threshold}`);
