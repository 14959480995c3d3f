import { createWriteStream } from 'node:fs';
import { access, constants, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseCommandLine, USAGE, type CliArgs } from './args.js';
import { ProgressLine } from './progress.js';
import { scoreLadderDeliveries } from '../pipeline/ladder.js';
import { RunPooling } from '../pipeline/summary.js';
import { createLogWriter } from '../pipeline/writers/index.js';
import type { LogWriter } from '../pipeline/writers/types.js';
import { NdjsonWriter } from '../pipeline/writers/formats.js';
import { windowLine } from '../pipeline/windows.js';
import { alertLine, type AlertEvent } from '../pipeline/alerts.js';
import { alignmentLine, alignmentText, driftLine, driftText } from '../pipeline/qc.js';
import type { QcOptions } from '../pipeline/qc.js';
import { ReportBuilder } from '../report/index.js';
import { DEFAULT_SEARCH_RANGE } from '../align/align-pairs.js';
import { UsageError, VmafError } from '../errors.js';
import { VERSION, LIBVMAF_VERSION } from '../version.js';

/** The log's version field: libvmaf's schema version, and who wrote it. */
const LOG_VERSION = `${LIBVMAF_VERSION}+vmaf-stream.${VERSION}`;

/** Runs the command line; resolves to the exit status (0 done, 1 input/runtime error, 2 usage). */
export async function main(argv: string[]): Promise<number> {
  try {
    if (argv[0] !== undefined && QUEUE_COMMANDS.includes(argv[0])) {
      const { runQueueCommand } = await import('./queue-commands.js');
      return await runQueueCommand(argv[0], argv.slice(1), run);
    }
    const command = parseCommandLine(argv);
    switch (command.kind) {
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      case 'version':
        process.stdout.write(`vmaf-stream ${VERSION} (libvmaf ${LIBVMAF_VERSION} integer features)\n`);
        return 0;
      case 'run':
        await run(command.args);
        return 0;
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`vmaf-stream: ${error.message}\nRun vmaf-stream --help for the options.\n`);
      return 2;
    }
    if (error instanceof VmafError) {
      process.stderr.write(`vmaf-stream: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`vmaf-stream: internal error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}

/** Subcommands: the queue's worker, a catalogue's submission, the queue's status. */
const QUEUE_COMMANDS = ['worker', 'submit', 'status'];

/** What a caller that runs several titles at once (submit) shares between them. */
export interface RunHooks {
  /** One progress line for all of them (instead of one per run). */
  progress?: ProgressLine | undefined;
  /** Printed before each pooled score: which title it is. */
  scorePrefix?: string;
}

/** The command line's run: score, write the logs, print the pooled scores. */
export type RunCommand = (args: CliArgs, hooks?: RunHooks) => Promise<void>;

/** One rendition's side of the run: its pooling and its log. */
interface RenditionRun {
  name: string;
  pooling: RunPooling;
  /** Where its log goes (its own file, or the combined stream). */
  out: NodeJS.WritableStream | undefined;
  label: string | undefined;
  writer: LogWriter | undefined;
}

async function run(args: CliArgs, hooks: RunHooks = {}): Promise<void> {
  const stderr = process.stderr;
  const progress = 'progress' in hooks ? hooks.progress : stderr.isTTY && !args.quiet ? new ProgressLine(stderr, args.score.queue === undefined ? args.score.frameCnt : undefined) : undefined;
  // The log's header names the frame size, known once the reference is open.
  let frameSize: { width: number; height: number } | undefined;
  const runs: RenditionRun[] = args.renditions.map((r) => ({ name: r.name, pooling: new RunPooling(), out: undefined, label: r.output, writer: undefined }));
  // A ladder's combined NDJSON: one stream, one writer per rendition, lines tagged with the name.
  const combined = args.combined && args.output !== undefined ? await openOutput(args.output) : undefined;
  try {
    for (const [k, r] of args.renditions.entries()) {
      if (combined) {
        runs[k]!.out = combined;
        runs[k]!.label = args.output;
      } else if (r.output !== undefined) {
        runs[k]!.out = await openOutput(r.output);
      }
    }
  } catch (error) {
    for (const r of runs) if (r.out && r.out !== process.stdout) (r.out as Writable).destroy();
    throw error;
  }
  if (combined && typeof (combined as Writable).setMaxListeners === 'function') {
    // Each writer listens for 'error' and 'drain' on the shared stream.
    const stream = combined as Writable;
    stream.setMaxListeners(Math.max(stream.getMaxListeners(), 2 * runs.length + 10));
  }
  const writerFor = (r: RenditionRun): LogWriter => {
    r.writer ??= createLogWriter(args.format, r.out!, {
      precision: args.precision,
      version: LOG_VERSION,
      label: r.label,
      ...frameSize,
      ...(combined ? { end: false, rendition: r.name } : {}),
    });
    return r.writer;
  };
  const byName = new Map(runs.map((r) => [r.name, r]));
  let framesSeen = -1;
  const note = (text: string) => stderr.write(`${progress ? '\n' : ''}vmaf-stream: ${text}\n`);
  // A ladder's notices name their rendition; a single pair's belong to its one rendition.
  const runOf = (rendition: string | undefined): RenditionRun => (rendition === undefined ? runs[0]! : byName.get(rendition)!);
  const who = (rendition: string | undefined) => (args.ladder && rendition !== undefined ? `${rendition}: ` : '');
  // The run's QC lines (windows, alerts, alignment, drift) go into the NDJSON log of their rendition.
  let logsClosed = false;
  const writeRecord = (rendition: string | undefined, record: object) => {
    if (logsClosed || args.format !== 'ndjson') return;
    const r = runOf(rendition);
    if (!r.out) return;
    (writerFor(r) as NdjsonWriter).writeRecord(record);
  };
  const report = args.report !== undefined ? new ReportBuilder() : undefined;
  if (args.report !== undefined) {
    // Fail now rather than after a long live run: the report's folder must take a file.
    await access(dirname(resolve(args.report)), constants.W_OK).catch((error: unknown) => {
      throw new VmafError('E_OUTPUT', `cannot write the report ${args.report}: ${(error as Error).message}`, { cause: error });
    });
  }
  let backendText: string | undefined;

  await new Promise<void>((resolve, reject) => {
    // An error in a QC callback (a log that cannot be written) ends the run.
    const guarded = <T>(fn: (value: T) => void) => (value: T) => {
      try {
        fn(value);
      } catch (error) {
        fail(error);
      }
    };
    const qc: QcOptions = {
      onWindow: guarded((w) => writeRecord(w.rendition, windowLine(w))),
      onAlert: guarded((a) => {
        // Alerts are what a live QC run is for: printed even with -q.
        note(alertText(a, who(a.rendition)));
        writeRecord(a.rendition, alertLine(a));
        report?.addAlert({ rendition: a.rendition ?? runs[0]!.name, spec: a.spec, state: a.state, index: a.index, ...(a.pts !== undefined ? { pts: a.pts } : {}), value: a.value });
      }),
      onAlignment: guarded((a) => {
        note(`${who(a.rendition)}${alignmentText(a, args.score.alignRange ?? DEFAULT_SEARCH_RANGE)}`);
        writeRecord(a.rendition, alignmentLine(a));
      }),
      onDrift: guarded((d) => {
        const text = driftText(d);
        if (text !== undefined) note(`${who(d.rendition)}${text}`);
        writeRecord(d.rendition, driftLine(d));
      }),
    };
    const subscription = scoreLadderDeliveries(
      args.reference,
      args.renditions.map((r) => ({
        input: r.path,
        name: r.name,
        ...(r.frameSkip !== undefined ? { frameSkip: r.frameSkip } : {}),
        ...(r.align !== undefined ? { align: r.align } : {}),
      })),
      {
        ...args.score,
        ...qc,
        onWarning: (message) => note(`warning: ${message}`),
        onFormat: (format) => {
          frameSize = { width: format.width, height: format.height };
        },
        onBackend: (backend) => {
          backendText = backend.description;
        },
        // A queued title's length is known once planned: the progress line's ETA.
        ...(args.score.queue !== undefined ? { queue: { ...(typeof args.score.queue === 'string' ? { url: args.score.queue } : args.score.queue), onPlan: (plan) => progress?.expect(plan.frames) } } : {}),
      },
      // One pair: its notices carry no rendition, as score()'s.
      !args.ladder,
    ).subscribe({
      next: ({ result: { rendition, result }, delivered }) => {
        const r = byName.get(rendition)!;
        r.pooling.add(result);
        report?.addFrame(rendition, result);
        if (result.index > framesSeen) {
          framesSeen = result.index;
          progress?.frameDone();
        }
        if (!r.out) return delivered();
        try {
          const writer = writerFor(r);
          // A slow log reader holds the frame's credit, so decoding waits for it.
          if (writer.writeFrame(result)) delivered();
          else writer.ready().then(delivered, (error: unknown) => fail(error));
        } catch (error) {
          fail(error);
        }
      },
      error: reject,
      complete: resolve,
    });
    const fail = (error: unknown) => {
      subscription.unsubscribe();
      reject(error);
    };
    // Ctrl-C on a live input ends the run cleanly: the logs still close with what was scored.
    process.once('SIGINT', () => {
      subscription.unsubscribe();
      resolve();
    });
  });

  if (!('progress' in hooks)) progress?.finish();
  logsClosed = true;
  const summaries = runs.map((r) => ({ run: r, summary: r.pooling.summary(LOG_VERSION) }));
  for (const { run: r, summary } of summaries) if (r.out) await writerFor(r).end(summary);
  if (combined && combined !== process.stdout) {
    combined.end();
    await finished(combined as Writable).catch((error: unknown) => {
      throw new VmafError('E_OUTPUT', `cannot write the log ${args.output}: ${(error as Error).message}`, { cause: error });
    });
  }
  // The report last, once the logs are complete (a run stopped with Ctrl-C gets one too).
  if (report && args.report !== undefined) {
    const html = report.render({
      renditions: summaries.map(({ run: r, summary }) => ({ name: r.name, summary })),
      inputs: { reference: args.reference, distorted: args.renditions.map((r) => r.path) },
      ...(backendText !== undefined ? { backend: backendText } : {}),
    });
    await writeFile(args.report, html).catch((error: unknown) => {
      throw new VmafError('E_OUTPUT', `cannot write the report ${args.report}: ${(error as Error).message}`, { cause: error });
    });
  }
  if (summaries.every(({ summary }) => summary.frameCount === 0)) throw new VmafError('E_INPUT_EMPTY', 'no frames were scored');
  if (!args.quiet || args.output === undefined) {
    // Model scores only, as libvmaf prints them; the features stay in the log. A ladder
    // prints each rendition's, its name first.
    for (const { run: r, summary } of summaries) {
      for (const [name, pooled] of Object.entries(summary.pooled)) {
        if (!isFeatureName(name)) stderr.write(`${hooks.scorePrefix ?? ''}${args.ladder ? `${r.name}: ` : ''}${name}: ${pooled.mean.toFixed(6)}\n`);
      }
    }
  }
}

/** An alert's line on stderr. */
function alertText(a: AlertEvent, who: string): string {
  const subject = a.stat !== undefined ? `${a.stat}(${a.metric})` : a.metric;
  const at = (index: number, pts?: number) => `frame ${index}${pts !== undefined ? ` (${pts.toFixed(3)} s)` : ''}`;
  const value = Number.isFinite(a.value) ? a.value.toFixed(3) : String(a.value);
  const spec = who !== '' && a.spec.startsWith(who.slice(0, -1)) ? a.spec : `${who}${a.spec}`;
  return a.state === 'start'
    ? `alert: ${spec}: started at ${at(a.index, a.pts)}, ${subject} ${value}, holding since ${at(a.since.index, a.since.pts)}`
    : `alert: ${spec}: cleared at ${at(a.index, a.pts)}, ${subject} ${value}`;
}

function isFeatureName(name: string): boolean {
  return name.startsWith('integer_') || name.startsWith('VMAF_');
}

async function openOutput(path: string): Promise<NodeJS.WritableStream> {
  if (path === '-') return process.stdout;
  const out = createWriteStream(path);
  try {
    await once(out, 'open');
  } catch (error) {
    throw new VmafError('E_OUTPUT', `cannot write the log ${path}: ${(error as Error).message}`, { cause: error });
  }
  return out;
}
