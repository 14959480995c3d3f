import { parseArgs } from 'node:util';
import { UsageError } from '../errors.js';
import type { LogFormat } from '../pipeline/writers/types.js';
import type { ScoreOptions } from '../pipeline/score.js';

/** What the command line asks for, validated. */
export interface CliArgs {
  reference: string;
  distorted: string;
  score: ScoreOptions;
  output?: string;
  format: LogFormat;
  precision?: number;
  quiet: boolean;
}

export type CliCommand = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; args: CliArgs };

export const USAGE = `Usage: vmaf-stream -r REF -d DIS [options]

Scores DIS against REF with VMAF, frame by frame, as the frames are decoded.
Inputs: any file or URL ffmpeg reads, .y4m and raw .yuv (read natively), '-' for stdin, named pipes.

libvmaf's options:
 --reference/-r PATH        reference input
 --distorted/-d PATH        distorted input
 --width/-w N               width of raw .yuv input
 --height/-h N              height of raw .yuv input
 --pixel_format/-p FMT      pixel format of raw input (420/422/444)
 --bitdepth/-b N            bit depth of raw input (8/10/12/16)
 --model/-m PARAMS          model, colon delimited: version=NAME | path=FILE, name=LABEL,
                            enable_transform, disable_clip; repeat for several models
                            (default version=vmaf_v0.6.1:name=vmaf)
 --output/-o PATH           log file ('-' for standard output)
 --xml | --json | --csv | --sub    log format (default xml)
 --threads N                frames computed at once by the cpu backend (default: cores)
 --frame_cnt N              score at most N frames
 --frame_skip_ref N         skip the first N reference frames
 --frame_skip_dist N        skip the first N distorted frames
 --subsample N              score every Nth frame
 --no_prediction/-n         features only, no model scores
 --quiet/-q                 no progress line
 --version/-v               print the version and exit

vmaf-stream's own:
 --ndjson                   log one JSON line per frame the moment it is scored
 --precision N              digits in logs (default libvmaf's formatting; 17 round-trips doubles)
 --backend cpu|gpu|auto     feature backend (default auto: gpu when a hardware GPU exists)
 --gpu-adapter NAME         pick a WebGPU adapter by name
 --ffmpeg PATH              ffmpeg binary (default $FFMPEG_PATH, then the bundled one)
 --scale                    scale the distorted input to the reference's size (bicubic)
 --help                     this text

Exit status: 0 done, 1 input or runtime error, 2 usage error.`;

const OPTIONS = {
  reference: { type: 'string', short: 'r' },
  distorted: { type: 'string', short: 'd' },
  width: { type: 'string', short: 'w' },
  height: { type: 'string', short: 'h' },
  pixel_format: { type: 'string', short: 'p' },
  bitdepth: { type: 'string', short: 'b' },
  model: { type: 'string', short: 'm', multiple: true },
  output: { type: 'string', short: 'o' },
  xml: { type: 'boolean' },
  json: { type: 'boolean' },
  csv: { type: 'boolean' },
  sub: { type: 'boolean' },
  ndjson: { type: 'boolean' },
  threads: { type: 'string' },
  frame_cnt: { type: 'string' },
  frame_skip_ref: { type: 'string' },
  frame_skip_dist: { type: 'string' },
  subsample: { type: 'string' },
  no_prediction: { type: 'boolean', short: 'n' },
  quiet: { type: 'boolean', short: 'q' },
  version: { type: 'boolean', short: 'v' },
  precision: { type: 'string' },
  backend: { type: 'string' },
  'gpu-adapter': { type: 'string' },
  ffmpeg: { type: 'string' },
  scale: { type: 'boolean' },
  help: { type: 'boolean' },
} as const;

export function parseCommandLine(argv: string[]): CliCommand {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (!values.reference) throw new UsageError('missing --reference/-r');
  if (!values.distorted) throw new UsageError('missing --distorted/-d');

  const formats = (['xml', 'json', 'csv', 'sub', 'ndjson'] as const).filter((f) => values[f]);
  if (formats.length > 1) throw new UsageError(`choose one log format, not ${formats.map((f) => `--${f}`).join(' and ')}`);

  const backend = values.backend ?? 'auto';
  if (backend !== 'cpu' && backend !== 'gpu' && backend !== 'auto') {
    throw new UsageError(`--backend must be cpu, gpu or auto, not "${backend}"`);
  }
  const pixelFormat = values.pixel_format;
  if (pixelFormat !== undefined && !['420', '422', '444', '400'].includes(pixelFormat)) {
    throw new UsageError(`--pixel_format must be 420, 422 or 444, not "${pixelFormat}"`);
  }
  const bitDepth = optionalInt(values.bitdepth, '--bitdepth', 8);
  if (bitDepth !== undefined && ![8, 10, 12, 16].includes(bitDepth)) {
    throw new UsageError(`--bitdepth must be 8, 10, 12 or 16, not ${bitDepth}`);
  }

  return {
    kind: 'run',
    args: {
      reference: values.reference,
      distorted: values.distorted,
      output: values.output,
      format: formats[0] ?? 'xml',
      precision: optionalInt(values.precision, '--precision', 1, 17),
      quiet: values.quiet ?? false,
      score: {
        backend,
        threads: optionalInt(values.threads, '--threads', 1),
        models: values.model,
        noPrediction: values.no_prediction ?? false,
        frameSkipRef: optionalInt(values.frame_skip_ref, '--frame_skip_ref', 0),
        frameSkipDist: optionalInt(values.frame_skip_dist, '--frame_skip_dist', 0),
        frameCnt: optionalInt(values.frame_cnt, '--frame_cnt', 1),
        subsample: optionalInt(values.subsample, '--subsample', 1),
        width: optionalInt(values.width, '--width', 1),
        height: optionalInt(values.height, '--height', 1),
        pixelFormat: pixelFormat as ScoreOptions['pixelFormat'],
        bitDepth,
        ffmpegPath: values.ffmpeg,
        scale: values.scale ?? false,
        gpuAdapter: values['gpu-adapter'],
      },
    },
  };
}

function optionalInt(text: string | undefined, flag: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UsageError(`${flag} needs an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not "${text}"`);
  }
  return value;
}
