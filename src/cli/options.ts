/**
 * The command line's option table and its parse into raw values: what args.ts (every
 * command) and run-args.ts (a scoring command's checks) share.
 */
import { parseArgs } from 'node:util';
import { UsageError } from '../errors.js';

const OPTIONS = {
  reference: { type: 'string', short: 'r' },
  distorted: { type: 'string', short: 'd', multiple: true },
  width: { type: 'string', short: 'w' },
  height: { type: 'string', short: 'h' },
  pixel_format: { type: 'string', short: 'p' },
  bitdepth: { type: 'string', short: 'b' },
  model: { type: 'string', short: 'm', multiple: true },
  feature: { type: 'string', multiple: true },
  aom_ctc: { type: 'string' },
  nflx_ctc: { type: 'string' },
  cpumask: { type: 'string' },
  gpumask: { type: 'string' },
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
  verbose: { type: 'boolean' },
  version: { type: 'boolean', short: 'v' },
  precision: { type: 'string' },
  backend: { type: 'string' },
  'gpu-adapter': { type: 'string' },
  'gpu-timeout': { type: 'string' },
  ffmpeg: { type: 'string' },
  'ffmpeg-input-options': { type: 'string' },
  decoders: { type: 'string' },
  protocols: { type: 'string' },
  'stall-timeout': { type: 'string' },
  scale: { type: 'boolean' },
  'no-scale': { type: 'boolean' },
  help: { type: 'boolean' },
  list: { type: 'boolean' },
  window: { type: 'string' },
  'window-hop': { type: 'string' },
  'window-metrics': { type: 'string' },
  'window-percentile': { type: 'string', multiple: true },
  alert: { type: 'string', multiple: true },
  align: { type: 'string' },
  'align-range': { type: 'string' },
  drift: { type: 'boolean' },
  report: { type: 'string' },
  queue: { type: 'string' },
  segment: { type: 'string' },
} as const;

/** Subcommands: the queue's worker, a catalogue's submission, the queue's status. */
export const QUEUE_COMMANDS: readonly string[] = ['worker', 'submit', 'status'];

/** The parsed options, before a scoring command's are validated (run-args.ts). */
export type CliValues = ReturnType<typeof parseValues>;

export function parseValues(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }).values;
}

/** A positive number of seconds (--gpu-timeout, --stall-timeout). */
export function parseSeconds(text: string, flag: string): number {
  const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!(value > 0) || !Number.isFinite(value)) throw new UsageError(`${flag} needs a positive number of seconds, not "${text}"`);
  return value;
}
