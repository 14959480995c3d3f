// A transcoder's ladder: every rendition against one reference, decoded once. A rendition of
// another size is scaled to the reference's (bicubic); each result names its rendition.
// Run: node examples/ladder.mjs REF RENDITION... (a RENDITION may be NAME=PATH)
import { scoreLadder } from 'vmaf-stream';

const [ref = 'examples/media/ref.y4m', ...args] = process.argv.slice(2);
const renditions = (args.length > 0 ? args : ['examples/media/dis.y4m']).map((arg) => {
  const at = arg.indexOf('=');
  return at > 0 ? { name: arg.slice(0, at), input: arg.slice(at + 1) } : arg;
});

const worst = new Map();
scoreLadder(ref, renditions).subscribe({
  next: ({ rendition, result }) => {
    const vmaf = result.scores.vmaf;
    if (vmaf < (worst.get(rendition)?.vmaf ?? Infinity)) worst.set(rendition, { vmaf, frame: result.index, pts: result.refPts });
  },
  complete: () => {
    for (const [rendition, { vmaf, frame, pts }] of worst) console.log(`${rendition}: worst frame ${frame}${pts === undefined ? '' : ` (${pts.toFixed(3)} s)`}, VMAF ${vmaf.toFixed(2)}`);
  },
  error: (error) => {
    console.error(`${error.code}: ${error.message}`);
    process.exitCode = 1;
  },
});
