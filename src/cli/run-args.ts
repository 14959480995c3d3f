/**
 * A scoring command line's options, validated into CliArgs: the inputs and renditions, the
 * log, the models and features (checked against the extractor registry), live QC, the queue.
 * Loaded by parseCommandLine (args.ts) only for a scoring command: --help, --version, --list
 * and the option parser's usage errors need none of the modules it imports.
 */
import { parseFeatureArg } from '../extractors/request.js';
import { aomCtc, nflxCtc } from './presets.js';
import { UsageError } from '../errors.js';
import type { LogFormat } from '../pipeline/writers/types.js';
import type { ScoreOptions } from '../pipeline/score.js';
import { resolveRenditions, type LadderOptions } from '../pipeline/ladder.js';
import type { Span } from '../pipeline/windows.js';
import type { AlertSpec } from '../pipeline/alerts.js';
import type { AlignMode } from '../align/align-pairs.js';
import { parseSeconds, type CliValues } from './options.js';

/** One -d: a distorted input (a rendition of the reference). */
export interface CliRendition {
  path: string;
  /** Its name: name=, else the file's base name without the extension. */
  name: string;
  /** skip=: frames dropped from its start (else --frame_skip_dist). */
  frameSkip?: number;
  /** align=: its own alignment (else --align). */
  align?: AlignMode;
  /** Its log: -o with {name} replaced by the name (undefined without -o, or for a combined log). */
  output?: string;
}

/** What the command line asks for, validated. */
export interface CliArgs {
  reference: string;
  /** The -d inputs, in order: one for a plain run, several for a ladder. */
  renditions: CliRendition[];
  /** Several -d: a ladder (renditions scaled to the reference unless --no-scale, logs per rendition). */
  ladder: boolean;
  score: LadderOptions;
  /** -o as given: a path, '-', or a pattern with {name}. */
  output?: string;
  /** One NDJSON stream for every rendition (--ndjson, several -d, -o without {name}); lines carry "rendition". */
  combined: boolean;
  format: LogFormat;
  precision?: number;
  quiet: boolean;
  /** --verbose (or VMAF_STREAM_VERBOSE=1): the GPU driver's own diagnostics reach stderr too. */
  verbose: boolean;
  /** --report: the HTML report's path. */
  report?: string;
}

/** The input name that reads standard input. */
const STDIN = '-';

/** The placeholder -o replaces with each rendition's name. */
export const NAME_PLACEHOLDER = '{name}';

/**
 * The options of a scoring command line (no --help, --version or --list), validated. The
 * parsers of --window, --alert and --segment are loaded only when those are given.
 */
export async function runArgs(values: CliValues): Promise<CliArgs> {
  if (!values.reference) throw new UsageError('missing --reference/-r');
  if (!values.distorted || values.distorted.length === 0) throw new UsageError('missing --distorted/-d');

  const formats = (['xml', 'json', 'csv', 'sub', 'ndjson'] as const).filter((f) => values[f]);
  if (formats.length > 1) throw new UsageError(`choose one log format, not ${formats.map((f) => `--${f}`).join(' and ')}`);
  const format = formats[0] ?? 'xml';
  if (values.scale && values['no-scale']) throw new UsageError('choose --scale or --no-scale, not both');

  const specs = values.distorted.map(parseDistorted);
  const fromStdin = [values.reference, ...specs.map((d) => d.path)].filter((p) => p === STDIN).length;
  if (fromStdin > 1) {
    throw new UsageError(
      `${values.reference === STDIN ? '-r - and -d -' : 'two -d -'}: only one input can read standard input; ` +
        'give the other as a file or a named pipe (mkfifo)',
    );
  }
  const named = resolveRenditions(specs.map((d) => ({ input: d.path, ...(d.name !== undefined ? { name: d.name } : {}) })));
  const ladder = specs.length > 1;
  const output = values.output;
  const patterned = output?.includes(NAME_PLACEHOLDER) ?? false;
  if (ladder && output !== undefined && !patterned && format !== 'ndjson') {
    throw new UsageError(
      `-o ${output}: with ${specs.length} distorted inputs, each gets its own log: give a pattern with ${NAME_PLACEHOLDER} ` +
        `(e.g. -o logs/${NAME_PLACEHOLDER}.${format}), or --ndjson for one stream whose lines name their rendition`,
    );
  }
  if (patterned && output === '-') throw new UsageError('-o - cannot take a pattern');
  const renditions = specs.map((d, k): CliRendition => {
    const r: CliRendition = { path: d.path, name: named[k]!.name };
    if (d.frameSkip !== undefined) r.frameSkip = d.frameSkip;
    if (d.align !== undefined) r.align = d.align;
    if (output !== undefined && (patterned || !ladder)) {
      if (patterned && /[/\\\0]/.test(r.name)) throw new UsageError(`the rendition name "${r.name}" cannot go into a file name (-o ${output}): give it another name=`);
      r.output = output.split(NAME_PLACEHOLDER).join(r.name);
    }
    return r;
  });
  const outputs = new Set<string>();
  for (const r of renditions) {
    if (r.output === undefined || r.output === '-') continue;
    if (outputs.has(r.output)) throw new UsageError(`two renditions would write the same log ${r.output}`);
    outputs.add(r.output);
  }

  const backend = values.backend ?? 'auto';
  if (backend !== 'cpu' && backend !== 'gpu' && backend !== 'auto') {
    throw new UsageError(`--backend must be cpu, gpu or auto, not "${backend}"`);
  }
  const pixelFormat = values.pixel_format;
  if (pixelFormat !== undefined && !['420', '422', '444', '400'].includes(pixelFormat)) {
    throw new UsageError(`--pixel_format must be 420, 422 or 444, not "${pixelFormat}"`);
  }
  if (values.gpumask !== undefined) parseMask(values.gpumask, '--gpumask');
  const bitDepth = optionalInt(values.bitdepth, '--bitdepth', 8);
  if (bitDepth !== undefined && ![8, 10, 12, 16].includes(bitDepth)) {
    throw new UsageError(`--bitdepth must be 8, 10, 12 or 16, not ${bitDepth}`);
  }

  // Live QC.
  const windowFlags = (['window-hop', 'window-metrics', 'window-percentile'] as const).filter((f) => values[f] !== undefined);
  if (values.window === undefined && windowFlags.length > 0) throw new UsageError(`--${windowFlags[0]} needs --window SPAN`);
  let windows: LadderOptions['windows'];
  if (values.window !== undefined) {
    if (format !== 'ndjson' || output === undefined) {
      throw new UsageError('--window writes its windows into the NDJSON log: add --ndjson -o PATH (or -o - for standard output)');
    }
    const { parseSpan } = await import('../pipeline/windows.js');
    const window: Span = parseSpan(values.window, 'window');
    windows = { window };
    if (values['window-hop'] !== undefined) windows.hop = parseSpan(values['window-hop'], 'hop');
    if (values['window-metrics'] !== undefined) {
      const metrics = values['window-metrics'].split(',').map((m) => m.trim());
      if (metrics.some((m) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(m))) throw new UsageError(`--window-metrics "${values['window-metrics']}": expected metric names separated by commas (e.g. vmaf,vmaf_neg)`);
      windows.metrics = metrics;
    }
    if (values['window-percentile'] !== undefined) {
      windows.percentiles = values['window-percentile'].flatMap((text) =>
        text.split(',').map((p) => {
          const value = Number(p.trim());
          if (p.trim() === '' || !(value >= 0 && value <= 100)) throw new UsageError(`--window-percentile "${text}": expected numbers from 0 to 100 (e.g. 5 or 1,5)`);
          return value;
        }),
      );
    }
  }
  const names = renditions.map((r) => r.name);
  let alerts: AlertSpec[] = [];
  if (values.alert?.length) {
    const { parseAlertSpec } = await import('../pipeline/alerts.js');
    alerts = values.alert.map((text): AlertSpec => {
      const spec = parseAlertSpec(text);
      if (spec.rendition === undefined) return spec;
      if (!names.includes(spec.rendition)) {
        throw new UsageError(`--alert "${spec.text}": there is no rendition named "${spec.rendition}" (the renditions are ${names.map((n) => `"${n}"`).join(', ')})`);
      }
      if (ladder) return spec;
      // A single pair's results carry no rendition: its own name is the same as none.
      const { rendition: _, ...unprefixed } = spec;
      return unprefixed;
    });
  }
  const align = values.align === undefined ? undefined : parseAlign(values.align, '--align');
  const alignRange = optionalInt(values['align-range'], '--align-range', 0, 1000);
  if (alignRange !== undefined && align !== 'auto' && !renditions.some((r) => r.align === 'auto')) throw new UsageError('--align-range goes with --align auto');
  if (values.report !== undefined && values.report === '') throw new UsageError('--report needs a path');
  if (values.segment !== undefined && values.queue === undefined) throw new UsageError('--segment goes with --queue');
  if (values.segment !== undefined) (await import('../queue/segment-plan.js')).parseSegmentLength(values.segment);

  return {
    reference: values.reference,
    renditions,
    ladder,
    output,
    combined: ladder && output !== undefined && !patterned,
    format,
    precision: optionalInt(values.precision, '--precision', 1, 17),
    quiet: values.quiet ?? false,
    verbose: values.verbose ?? false,
    ...(values.report !== undefined ? { report: values.report } : {}),
    score: {
      ...(windows ? { windows } : {}),
      ...(alerts.length > 0 ? { alerts } : {}),
      ...(align !== undefined ? { align } : {}),
      ...(alignRange !== undefined ? { alignRange } : {}),
      ...(values.drift ? { drift: true } : {}),
      backend,
      threads: optionalInt(values.threads, '--threads', 1),
      ...modelsAndFeatures(values),
      ...(values.cpumask !== undefined ? { cpumask: parseMask(values.cpumask, '--cpumask') } : {}),
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
      ...(values['ffmpeg-input-options'] !== undefined ? { ffmpegInputOptions: values['ffmpeg-input-options'].split(/\s+/).filter((a) => a !== '') } : {}),
      ...(values.decoders !== undefined ? { decoders: values.decoders === 'auto' ? ('auto' as const) : optionalInt(values.decoders, '--decoders', 1, 64)! } : {}),
      ...(values.protocols !== undefined ? { protocols: parseProtocols(values.protocols) } : {}),
      ...(values['stall-timeout'] !== undefined ? { stallTimeoutMs: parseSeconds(values['stall-timeout'], '--stall-timeout') * 1000 } : {}),
      // A ladder scales renditions to the reference unless told not to; one pair only with --scale.
      scale: ladder ? !values['no-scale'] : (values.scale ?? false),
      gpuAdapter: values['gpu-adapter'],
      ...(values['gpu-timeout'] !== undefined ? { gpuTimeoutMs: parseSeconds(values['gpu-timeout'], '--gpu-timeout') * 1000 } : {}),
      ...(values.queue !== undefined ? { queue: { url: values.queue, ...(values.segment !== undefined ? { segment: values.segment } : {}) } } : {}),
    },
  };
}

/** --protocols: names separated by commas (a trailing ':' or '://' is allowed). */
function parseProtocols(text: string): string[] {
  const names = text.split(',').map((p) => p.trim().toLowerCase().replace(/:(\/\/)?$/, ''));
  for (const name of names) if (!/^[a-z][a-z0-9+.-]*$/.test(name)) throw new UsageError(`--protocols needs protocol names separated by commas (file,https), not "${text}"`);
  return names;
}

/** A libvmaf bit mask: decimal or 0x hexadecimal, as strtol with base 0 reads it. */
function parseMask(text: string, flag: string): number {
  const value = /^0x[0-9a-f]+$/i.test(text) ? parseInt(text.slice(2), 16) : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value > 0xffffffff) throw new UsageError(`${flag} needs a bit mask (decimal or 0x hexadecimal), not "${text}"`);
  return value;
}

/** -m and --feature, after the CTC presets' models and features (libvmaf applies those where they appear). */
function modelsAndFeatures(values: { model?: string[]; feature?: string[]; aom_ctc?: string; nflx_ctc?: string }): Pick<ScoreOptions, 'models' | 'features'> {
  if (values.aom_ctc !== undefined && values.nflx_ctc !== undefined) throw new UsageError('choose --aom_ctc or --nflx_ctc, not both');
  const preset = values.aom_ctc !== undefined ? aomCtc(values.aom_ctc) : values.nflx_ctc !== undefined ? nflxCtc(values.nflx_ctc) : undefined;
  const models = [...(preset?.models ?? []), ...(values.model ?? [])];
  const features = [...(preset?.features ?? []), ...(values.feature ?? [])];
  return {
    ...(models.length > 0 ? { models } : {}),
    ...(features.length > 0 ? { features: features.map(parseFeatureArg) } : {}),
  };
}

/** --align's value: 'auto' or a whole number of frames (may be negative). */
export function parseAlign(text: string, flag: string): AlignMode {
  if (text === 'auto') return 'auto';
  if (!/^[-+]?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`${flag} needs auto or a whole number of frames (distorted frame i against reference frame i+N), not "${text}"`);
  }
  return Number(text);
}

interface DistortedSpec {
  path: string;
  name?: string;
  frameSkip?: number;
  align?: AlignMode;
}

/** One -d: a plain path, or name=LABEL:skip=N:align=auto|N:path=PATH (path= last, taking the rest). */
export function parseDistorted(text: string): DistortedSpec {
  if (!/^(name|path|skip|align)=/.test(text)) return { path: text };
  const out: Partial<DistortedSpec> = {};
  let rest = text;
  while (rest !== '') {
    if (rest.startsWith('path=')) {
      out.path = rest.slice('path='.length);
      break;
    }
    const colon = rest.indexOf(':');
    const token = colon < 0 ? rest : rest.slice(0, colon);
    rest = colon < 0 ? '' : rest.slice(colon + 1);
    const eq = token.indexOf('=');
    const key = eq < 0 ? token : token.slice(0, eq);
    const value = eq < 0 ? undefined : token.slice(eq + 1);
    if (key === 'name') {
      if (!value) throw new UsageError(`-d ${text}: name= needs a value`);
      if (out.name !== undefined) throw new UsageError(`-d ${text}: name= given twice`);
      out.name = value;
    } else if (key === 'skip') {
      out.frameSkip = optionalInt(value ?? '', `-d ${text}: skip=`, 0);
    } else if (key === 'align') {
      out.align = parseAlign(value ?? '', `-d ${text}: align=`);
    } else {
      throw new UsageError(`-d ${text}: unknown key "${key}"; expected name=LABEL, skip=N, align=auto|N, path=PATH (path= last)`);
    }
  }
  if (!out.path) throw new UsageError(`-d ${text}: missing path=PATH (it comes last: -d name=720p:path=720p.mp4)`);
  const result: DistortedSpec = { path: out.path };
  if (out.name !== undefined) result.name = out.name;
  if (out.frameSkip !== undefined) result.frameSkip = out.frameSkip;
  if (out.align !== undefined) result.align = out.align;
  return result;
}

function optionalInt(text: string | undefined, flag: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UsageError(`${flag} needs an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not "${text}"`);
  }
  return value;
}
