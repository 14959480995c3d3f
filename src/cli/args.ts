/**
 * The command line's commands: the usage text and the parser (the option table is
 * options.ts), which hands a scoring command's options to run-args.ts (loaded only then).
 */
import { UsageError } from '../errors.js';
import { parseValues, type CliValues } from './options.js';
import type { CliArgs } from './run-args.js';

export type { CliArgs, CliRendition } from './run-args.js';
export type { CliValues } from './options.js';

export type CliCommand = { kind: 'help' } | { kind: 'version' } | { kind: 'list' } | { kind: 'run'; args: CliArgs };

export const USAGE = `Usage: vmaf-stream -r REF -d DIS [-d DIS2 ...] [options]

Scores DIS against REF with VMAF, frame by frame, as the frames are decoded.
Inputs: any file or URL ffmpeg reads, .y4m and raw .yuv (read natively), '-' for stdin, named pipes.
Several -d score a ladder: every rendition against REF, which is decoded once.

libvmaf's options:
 --reference/-r PATH        reference input
 --distorted/-d DIS         distorted input; repeat for a ladder of renditions. DIS is a PATH,
                            or colon-delimited keys as -m: name=LABEL, skip=N, align=auto|N,
                            path=PATH (path= last: it takes the rest, colons included), e.g.
                            -d name=720p:path=out/720p.mp4. The name (default: the file's base
                            name without extension) labels results and logs; names are unique
 --width/-w N               width of raw .yuv input
 --height/-h N              height of raw .yuv input
 --pixel_format/-p FMT      pixel format of raw input (420/422/444)
 --bitdepth/-b N            bit depth of raw input (8/10/12/16)
 --model/-m PARAMS          model, colon delimited: version=NAME | path=FILE, name=LABEL,
                            enable_transform, disable_clip; repeat for several models
                            (default version=vmaf_v0.6.1:name=vmaf)
 --feature NAME[=OPT=VAL:OPT=VAL]   also compute a feature extractor, with options as
                            libvmaf takes them (--feature psnr, --feature
                            float_ssim=enable_db=true:clip_db=true); repeatable
 --aom_ctc v1.0..v7.0       AOM common test conditions: libvmaf's models and features preset
 --nflx_ctc v1.0            Netflix common test conditions preset
 --cpumask N                restrict the cpu backend's SIMD as libvmaf's mask does: bit 3
                            (AVX2, 8) leaves the baseline paths, bit 4 (AVX-512, 16) at most
                            AVX2 (same results); bits 0-2 (SSE2..SSE4.1) are x86-64's baseline
 --gpumask N                accepted for libvmaf's command lines and ignored: vmaf-stream
                            picks its GPU path with --backend
 --output/-o PATH           log file ('-' for standard output); with several -d a pattern
                            with {name}, one log per rendition (-o logs/{name}.json), or, with
                            --ndjson, one stream whose lines carry "rendition"
 --xml | --json | --csv | --sub    log format (default xml)
 --threads N                frames computed at once by the cpu backend (default: cores)
 --frame_cnt N              score at most N frames
 --frame_skip_ref N         skip the first N reference frames
 --frame_skip_dist N        skip the first N distorted frames
 --subsample N              score every Nth frame
 --no_prediction/-n         features only, no model scores
 --quiet/-q                 no progress line
 --verbose                  also show the diagnostics of the GPU stack (Dawn's own lines),
                            hidden by default; VMAF_STREAM_VERBOSE=1 does the same
 --version/-v               print the version and exit

vmaf-stream's own:
 --ndjson                   log one JSON line per frame the moment it is scored
 --precision N              digits in logs (default libvmaf's formatting; 17 round-trips doubles)
 --backend cpu|gpu|auto     feature backend (default auto: gpu when a hardware GPU exists)
 --gpu-adapter NAME         pick a WebGPU adapter by name
 --gpu-timeout SECONDS      a GPU that does not answer for this long (a hung device) is an
                            error naming the input and the frame (default 300)
 --ffmpeg PATH              ffmpeg binary (default $FFMPEG_PATH, then the bundled one)
 --ffmpeg-input-options ARGS
                            options for ffmpeg before each -i it decodes, split at spaces
                            (hardware decoding with your ffmpeg: '-hwaccel cuda')
 --decoders N|auto          ffmpeg decoders per compressed local file, over segments cut at
                            keyframes (same frames as one); default 1; auto: cores/2, at most 4
 --protocols LIST           what inputs may be, comma separated: file (local paths), pipe
                            ('-'), URL schemes (https, ...); also ffmpeg's protocol whitelist
                            (e.g. --protocols file,https); default anything ffmpeg reads
 --stall-timeout SECONDS    an input (a pipe, standard input, a stream decoded by ffmpeg) that
                            sends no frame for this long is an error naming it and the frame
                            (default: wait for ever)
 --scale                    scale the distorted input to the reference's size (bicubic);
                            the default with several -d
 --no-scale                 with several -d: a rendition of another size is an error
 --list                     the built-in models and the feature extractors with their options
 --help                     this text

Live QC:
 --window SPAN              rolling windows in the NDJSON log: {"type":"window",...} lines with
                            mean, min, max, harmonic mean and a low percentile over the last
                            SPAN (60f: frames, 2s or 500ms: time)
 --window-hop SPAN          how often a window is emitted (default: half the window)
 --window-metrics LIST      metrics pooled, comma separated (default: every model's score)
 --window-percentile P      percentiles per window, comma separated or repeated (default 5)
 --alert SPEC               an alert, repeatable: [RENDITION:]METRIC<N [for SPAN], or
                            STAT(METRIC)<N over SPAN [for SPAN] with STAT mean, min, max,
                            harmonic_mean, pN; comparators < <= > >=. Each start and clear
                            is printed on stderr (even with -q) and logged in NDJSON
                            ({"type":"alert",...}), e.g. --alert 'vmaf<60 for 0.5s'
 --align auto|N             align the distorted input on the reference: auto searches the
                            offset (by luma PSNR of the first frames; per rendition in a
                            ladder), N scores distorted frame i against reference frame i+N;
                            the offset is printed on stderr and logged ({"type":"alignment"})
 --align-range N            auto: offsets from -N to N are searched (default 10)
 --drift                    watch for dropped and repeated frames without --align too
 --report PATH              write a self-contained HTML report at the end (and on Ctrl-C)

Past one machine (BullMQ on Redis; see also vmaf-stream worker|submit|status --help):
 --queue redis://HOST:PORT  cut the title into segments scored by vmaf-stream workers on this
                            queue; the merged log is the one this command writes without it
 --segment N|Ns             segment length in frames (600) or seconds (20s); default 3000 frames
Dropped and repeated frames of an aligned distorted stream (--align, align=, or --drift for
every one) are watched for: printed on stderr and logged ({"type":"drift",...}).

Exit status: 0 done, 1 input or runtime error (a log that cannot be written included),
2 usage error, 130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM (the logs are complete with
the frames scored until then), 141 standard output closed by its reader (as by SIGPIPE).`;


/** The command line's command; a scoring command's options are validated by run-args.ts, loaded then. */
export async function parseCommandLine(argv: string[]): Promise<CliCommand> {
  let values: CliValues;
  try {
    values = parseValues(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  if (values.list) return { kind: 'list' };
  const { runArgs } = await import('./run-args.js');
  return { kind: 'run', args: await runArgs(values) };
}
