// Compares several encodes of one source: each against the source (decoded once, as a
// ladder), then a table of pooled VMAF, VMAF NEG and the harmonic mean of VMAF per encode,
// best first.
//
// Run: node examples/batch-compare.mjs [--json] [SOURCE ENCODE...]   (an ENCODE may be NAME=PATH)
// With no ENCODE, three x264 encodes of SOURCE (default examples/media/ref.y4m) at CRF 18,
// 30 and 42 are made first with ffmpeg ($FFMPEG_PATH, else the bundled one) in a temporary
// directory. --json prints the rows as one JSON array instead of the table.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scoreLadderEvents } from 'vmaf-stream';

const args = process.argv.slice(2);
const json = args.includes('--json');
const [source = 'examples/media/ref.y4m', ...given] = args.filter((a) => a !== '--json');

let scratch;
const encodes = given.map((arg) => {
  const at = arg.indexOf('=');
  return at > 0 ? { name: arg.slice(0, at), input: arg.slice(at + 1) } : arg;
});
if (encodes.length === 0) {
  const ffmpeg = process.env.FFMPEG_PATH ?? createRequire(import.meta.url)('@ffmpeg-installer/ffmpeg').path;
  scratch = mkdtempSync(join(tmpdir(), 'vmaf-batch-'));
  for (const crf of [18, 30, 42]) {
    const out = join(scratch, `crf${crf}.mp4`);
    const r = spawnSync(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-i', source, '-c:v', 'libx264', '-crf', String(crf), '-pix_fmt', 'yuv420p', out], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`ffmpeg failed on CRF ${crf}: ${r.stderr}`);
    encodes.push({ name: `x264 crf ${crf}`, input: out });
  }
}

const models = ['version=vmaf_v0.6.1:name=vmaf', 'version=vmaf_v0.6.1neg:name=vmaf_neg'];
scoreLadderEvents(source, encodes, { models, drift: false })
  .on('end', (summaries) => {
    const rows = Object.entries(summaries)
      .map(([name, { frameCount, pooled }]) => ({ name, frames: frameCount, vmaf: pooled.vmaf.mean, vmaf_neg: pooled.vmaf_neg.mean, vmaf_hmean: pooled.vmaf.harmonic_mean }))
      .sort((a, b) => b.vmaf - a.vmaf);
    if (json) console.log(JSON.stringify(rows));
    else {
      const width = Math.max(6, ...rows.map((r) => r.name.length));
      console.log(`${'encode'.padEnd(width)}  frames      VMAF  VMAF NEG  harmonic`);
      for (const r of rows) {
        console.log(`${r.name.padEnd(width)}  ${String(r.frames).padStart(6)}  ${r.vmaf.toFixed(3).padStart(8)}  ${r.vmaf_neg.toFixed(3).padStart(8)}  ${r.vmaf_hmean.toFixed(3).padStart(8)}`);
      }
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  })
  .on('error', (error) => {
    console.error(`${error.code ?? 'error'}: ${error.message}`);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    process.exitCode = 1;
  });
