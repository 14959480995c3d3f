// A live ladder from fluent-ffmpeg commands: three rungs encoded from one source, each
// command's output written where the command says (OUTDIR/high.mp4, mid.mp4, low.mkv) and
// scored frame by frame against the source while it encodes. fluent-ffmpeg is an optional
// peer dependency of vmaf-stream: `npm install fluent-ffmpeg` to use it.
// Run: node examples/fluent-ladder.mjs [SOURCE] [OUTDIR]
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import installer from '@ffmpeg-installer/ffmpeg';
import ffmpeg from 'fluent-ffmpeg';
import { scoreLadderEvents, transcodeInput } from 'vmaf-stream';

const [source = 'examples/media/ref.y4m', outDir = mkdtempSync(join(tmpdir(), 'fluent-ladder-'))] = process.argv.slice(2);
mkdirSync(outDir, { recursive: true });
ffmpeg.setFfmpegPath(installer.path); // or a system ffmpeg: fluent-ffmpeg's own lookup

// The rungs, as a service would build them. The low rung is smaller: vmaf-stream scales
// it back to the source's size (bicubic) to score them, as a player would.
const rungs = {
  high: ffmpeg(source).videoCodec('libx264').outputOptions('-crf', '20', '-movflags', '+faststart').output(join(outDir, 'high.mp4')),
  mid: ffmpeg(source).videoCodec('libx264').outputOptions('-crf', '34').output(join(outDir, 'mid.mp4')),
  low: ffmpeg(source).videoCodec('libx264').size('50%').outputOptions('-crf', '30').output(join(outDir, 'low.mkv')),
};

const renditions = Object.entries(rungs).map(([name, command]) => ({ name, input: transcodeInput(command) }));
const frames = Object.fromEntries(Object.keys(rungs).map((name) => [name, 0]));
scoreLadderEvents(source, renditions, { alerts: ['vmaf<40 for 2f'] })
  .on('frame', ({ rendition, result }) => {
    frames[rendition] += 1;
    console.log(`${rendition} frame ${result.index}: vmaf ${result.scores.vmaf.toFixed(2)}`);
  })
  .on('alert', (a) => console.log(`alert: ${a.rendition}: ${a.spec} ${a.state} at frame ${a.index}`))
  .on('end', (summaries) => {
    for (const [name, summary] of Object.entries(summaries)) {
      console.log(`${name}: ${frames[name]} frames, pooled VMAF ${summary.pooled.vmaf.mean.toFixed(3)}`);
    }
    console.log(`encodes in ${outDir}`);
  })
  .on('error', (error) => {
    console.error(`${error.code}: ${error.message}`);
    process.exitCode = 1;
  });
