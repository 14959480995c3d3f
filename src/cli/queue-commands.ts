/**
 * The queue's subcommands:
 *   vmaf-stream worker --queue URL [--concurrency N] [--backend cpu|gpu|auto] [--threads N] [--allow DIR|PROTO ...]
 *   vmaf-stream submit --queue URL [--segment N|Ns] [batch.json | -]
 *   vmaf-stream status --queue URL [--json]
 */
import { readFile } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';

type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;
import { UsageError, VmafError } from '../errors.js';
import { parseAllow, startWorker } from '../queue/index.js';
import { catalogueArgv, parseCatalogue } from '../queue/catalogue.js';
import { queueStatus, statusText } from '../queue/queue-status.js';
import { checkQueueUrl } from '../queue/redis-connection.js';
import { parseSegmentLength } from '../queue/segment-plan.js';
import { parseCommandLine, type CliArgs } from './args.js';
import type { RunCommand } from './run-command.js';
import { ProgressLine } from './progress.js';

export const WORKER_USAGE = `Usage: vmaf-stream worker --queue redis://HOST:PORT [options]

Takes segment jobs from the queue and scores them here, until stopped (SIGINT/SIGTERM let the
segments in progress finish; SIGKILL hands them to another worker after --lock-ms).
 --queue URL          Redis: redis://[:password@]HOST:PORT[/DB], rediss:// for TLS
 --concurrency N      segments scored at once by this process (default 1)
 --backend cpu|gpu|auto   feature backend (default cpu)
 --threads N          frames computed at once by the cpu backend (default: cores)
 --gpu-adapter NAME   WebGPU adapter by name
 --ffmpeg PATH        ffmpeg binary
 --allow DIR|PROTO:   read only inputs below DIR or URLs of PROTO (https:, s3://); repeatable;
                      a job with any other input fails with an error naming it
 --lock-ms N          a job's lock without renewal (default 30000): a dead worker's segment
                      goes to another worker after about this long
 --backend-idle-ms N  a backend (a gpu device and its pipelines) is kept for the next segment of
                      the same models and frame size, and closed after N ms unused (default
                      30000; 0: a backend per segment)
 --quiet/-q           no line per segment`;

export const SUBMIT_USAGE = `Usage: vmaf-stream submit --queue redis://HOST:PORT [--segment N|Ns] [batch.json | -]

Scores a catalogue on the queue's workers and writes each title's logs, as vmaf-stream would.
batch.json: a JSON array of titles (or NDJSON, one title a line; '-' or none reads stdin):
  {"reference": "ref.mp4", "distorted": "dis.mp4", "output": "logs/dis.json"}
  {"reference": "src.mp4", "distorted": ["1080p.mp4", {"name": "low", "path": "480p.mp4"}],
   "output": "logs/{name}.xml", "models": ["version=vmaf_v0.6.1:name=vmaf"]}
  {"args": ["-r", "ref.y4m", "-d", "dis.y4m", "--json", "-o", "out.json", "--subsample", "2"]}
Keys: reference, distorted (a path, or a list of paths and {name, path, skip}), output, format
(xml|json|csv|sub|ndjson; else from output's extension), models, precision, frame_cnt,
frame_skip_ref, frame_skip_dist, subsample, no_prediction, scale, segment; or args: a command line.`;

export const STATUS_USAGE = `Usage: vmaf-stream status --queue redis://HOST:PORT [--json]

Shows the titles in progress and the segments waiting, running, done and failed, and the workers.`;

export async function runQueueCommand(command: string, argv: string[], run: RunCommand): Promise<number> {
  switch (command) {
    case 'worker':
      return worker(argv);
    case 'submit':
      return submit(argv, run);
    case 'status':
      return status(argv);
  }
  throw new UsageError(`unknown command ${command}`);
}

function parse<T extends ParseArgsOptionsConfig>(argv: string[], options: T, usage: string) {
  try {
    const parsed = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean' } }, strict: true, allowPositionals: true });
    if ((parsed.values as { help?: boolean }).help) {
      process.stdout.write(`${usage}\n`);
      return undefined;
    }
    return parsed;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function positiveInt(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new UsageError(`${flag} needs a whole number >= 1, not "${text}"`);
  return Number(text);
}

function wholeNumber(text: string, flag: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} needs a whole number >= 0, not "${text}"`);
  return Number(text);
}

async function worker(argv: string[]): Promise<number> {
  const parsed = parse(argv, {
    queue: { type: 'string' },
    concurrency: { type: 'string' },
    backend: { type: 'string' },
    threads: { type: 'string' },
    'gpu-adapter': { type: 'string' },
    ffmpeg: { type: 'string' },
    allow: { type: 'string', multiple: true },
    'lock-ms': { type: 'string' },
    'backend-idle-ms': { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
  } as const, WORKER_USAGE);
  if (!parsed) return 0;
  const v = parsed.values;
  if (parsed.positionals.length > 0) throw new UsageError(`worker: unexpected ${parsed.positionals[0]}`);
  if (v.queue === undefined) throw new UsageError('worker: missing --queue redis://HOST:PORT');
  const backend = v.backend ?? 'cpu';
  if (backend !== 'cpu' && backend !== 'gpu' && backend !== 'auto') throw new UsageError(`--backend must be cpu, gpu or auto, not "${backend}"`);
  const quiet = v.quiet ?? false;
  const running = await startWorker({
    queue: checkQueueUrl(v.queue),
    concurrency: positiveInt(v.concurrency, '--concurrency') ?? 1,
    backend,
    ...(v.threads !== undefined ? { threads: positiveInt(v.threads, '--threads')! } : {}),
    ...(v['gpu-adapter'] !== undefined ? { gpuAdapter: v['gpu-adapter'] } : {}),
    ...(v.ffmpeg !== undefined ? { ffmpegPath: v.ffmpeg } : {}),
    allow: parseAllow(v.allow ?? []),
    ...(v['lock-ms'] !== undefined ? { lockMs: positiveInt(v['lock-ms'], '--lock-ms')! } : {}),
    ...(v['backend-idle-ms'] !== undefined ? { backendIdleMs: wholeNumber(v['backend-idle-ms'], '--backend-idle-ms') } : {}),
    ...(quiet ? {} : { onEvent: (text: string) => process.stderr.write(`vmaf-stream worker: ${text}\n`) }),
  });
  process.stderr.write(`vmaf-stream worker: ready (pid ${process.pid}, ${backend} backend)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await running.close();
  return 0;
}

async function submit(argv: string[], run: RunCommand): Promise<number> {
  const parsed = parse(argv, { queue: { type: 'string' }, segment: { type: 'string' }, quiet: { type: 'boolean', short: 'q' } } as const, SUBMIT_USAGE);
  if (!parsed) return 0;
  const v = parsed.values;
  if (v.queue === undefined) throw new UsageError('submit: missing --queue redis://HOST:PORT');
  checkQueueUrl(v.queue);
  if (v.segment !== undefined) parseSegmentLength(v.segment);
  if (parsed.positionals.length > 1) throw new UsageError('submit: one batch file (or - for standard input)');
  const source = parsed.positionals[0] ?? '-';
  const text = source === '-' ? await readStdin() : await readFile(source, 'utf8').catch((error: unknown) => {
    throw new VmafError('E_INPUT_NOT_FOUND', `${source}: cannot read the batch: ${(error as Error).message}`);
  });
  const titles = parseCatalogue(text, source);
  const quiet = v.quiet ?? false;
  // Every title's command line first: a bad one is a usage error before anything is queued.
  const commands: Array<{ args: CliArgs; label: string }> = [];
  for (const [k, title] of titles.entries()) {
    const args = await parseCommandLine(catalogueArgv(title, v.queue!, v.segment, `${source}: title ${k + 1}`));
    if (args.kind !== 'run') throw new UsageError(`${source}: title ${k + 1}: not a scoring command`);
    commands.push({ args: { ...args.args, quiet: true }, label: `${args.args.reference} → ${args.args.renditions.map((r) => r.name).join(', ')}` });
  }
  const progress = process.stderr.isTTY && !quiet ? new ProgressLine(process.stderr) : undefined;
  let done = 0;
  const failures: string[] = [];
  await Promise.all(
    commands.map(async ({ args, label }, k) => {
      try {
        await run(args, { progress, scorePrefix: `title ${k + 1} (${label}): ` });
        done++;
      } catch (error) {
        failures.push(`title ${k + 1} (${label}): ${(error as Error).message}`);
      }
    }),
  );
  progress?.finish();
  for (const failure of failures) process.stderr.write(`vmaf-stream: ${failure}\n`);
  if (!quiet) process.stderr.write(`vmaf-stream: ${done} of ${commands.length} titles scored\n`);
  return failures.length > 0 ? 1 : 0;
}

async function status(argv: string[]): Promise<number> {
  const parsed = parse(argv, { queue: { type: 'string' }, json: { type: 'boolean' } } as const, STATUS_USAGE);
  if (!parsed) return 0;
  const v = parsed.values;
  if (v.queue === undefined) throw new UsageError('status: missing --queue redis://HOST:PORT');
  const report = await queueStatus(checkQueueUrl(v.queue));
  process.stdout.write(v.json ? `${JSON.stringify(report)}\n` : statusText(report));
  return 0;
}

async function readStdin(): Promise<string> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk as string;
  return text;
}
