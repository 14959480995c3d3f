import { createWriteStream } from 'node:fs';
import { access, constants, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseCommandLine, USAGE, type CliArgs } from './args.js';
import type { RunHooks } from './run-command.js';
import { ProgressLine } from './progress.js';
import type { RunPooling } from '../pipeline/summary.js';
import type { LogWriter } from '../pipeline/writers/types.js';
import type { NdjsonWriter } from '../pipeline/writers/formats.js';
import { UsageError, VmafError } from '../errors.js';
import { VERSION, LIBVMAF_VERSION } from '../version.js';
import { mark } from '../trace.js';
import { discardUnusedGpuThread, startGpuEarly } from './early-gpu-thread.js';
import { QUEUE_COMMANDS } from './options.js';

/** The log's version field: libvmaf's schema version, and who wrote it. */
const LOG_VERSION = `${LIBVMAF_VERSION}+vmaf-stream.${VERSION}`;

/**
 * Exit statuses. A run stopped by a signal ends with 128 + the signal's number, as a shell
 * reports a process the signal killed; a closed standard output (the reader of `| head`
 * went away) ends as SIGPIPE would have ended it, quietly.
 */
export const EXIT_STATUS = { done: 0, error: 1, usage: 2, SIGINT: 130, stdoutClosed: 141, SIGTERM: 143 } as const;

/** The signals that interrupt a run: the log is finished with the frames scored so far. */
export type InterruptSignal = 'SIGINT' | 'SIGTERM';
const INTERRUPT_SIGNALS: readonly InterruptSignal[] = ['SIGINT', 'SIGTERM'];

/** How a run ended without an error. */
interface RunOutcome {
  interruptedBy?: InterruptSignal;
}

/**
 * Runs the command line; resolves to the exit status (EXIT_STATUS: 0 done, 1 input/runtime
 * error, 2 usage, 130/143 interrupted by SIGINT/SIGTERM, 141 standard output closed).
 * `exitAfterRun`: the caller ends the process once this resolves (bin/vmaf-stream), so a run
 * leaves its GPU device to the exit rather than closing it first.
 */
export async function main(argv: string[], options: { exitAfterRun?: boolean } = {}): Promise<number> {
  mark('modules loaded');
  watchStandardStreams();
  // Where bin/vmaf-stream has not already (a caller of main()): a run that may score on the GPU starts its thread now.
  await startGpuEarly(argv);
  let logsToStdout = false;
  try {
    if (argv[0] !== undefined && QUEUE_COMMANDS.includes(argv[0])) {
      const { runQueueCommand } = await import('./queue-commands.js');
      return await runQueueCommand(argv[0], argv.slice(1), run);
    }
    const command = await parseCommandLine(argv);
    switch (command.kind) {
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return EXIT_STATUS.done;
      case 'version':
        process.stdout.write(`vmaf-stream ${VERSION} (libvmaf ${LIBVMAF_VERSION} integer features)\n`);
        return EXIT_STATUS.done;
      case 'list':
        process.stdout.write(`${(await import('./list.js')).listText()}\n`);
        return EXIT_STATUS.done;
      case 'run': {
        // The GPU stack's module, loaded here only when asked for (the gpu backend loads it itself).
        if (command.args.verbose) (await import('../kernels/gpu/device.js')).showDawnDiagnostics(true);
        logsToStdout = command.args.output === '-';
        const outcome = await run(command.args, options.exitAfterRun ? { exitAfterRun: true } : {});
        mark('run done');
        return outcome.interruptedBy ? EXIT_STATUS[outcome.interruptedBy] : EXIT_STATUS.done;
      }
    }
  } catch (error) {
    // The log went to a pipe whose reader closed it: stop quietly, as Unix tools do. (The
    // write's own error can reach here before stdout's 'error' event, a tick later.)
    if (error instanceof VmafError && error.code === 'E_OUTPUT' && (standardStreams.stdoutClosed || (logsToStdout && causedBy(error, 'EPIPE')))) {
      return EXIT_STATUS.stdoutClosed;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`vmaf-stream: ${error.message}\nRun vmaf-stream --help for the options.\n`);
      return EXIT_STATUS.usage;
    }
    if (error instanceof VmafError) {
      process.stderr.write(`vmaf-stream: ${error.message}\n`);
      return EXIT_STATUS.error;
    }
    process.stderr.write(`vmaf-stream: internal error: ${(error as Error)?.stack ?? String(error)}\n`);
    return EXIT_STATUS.error;
  } finally {
    // A thread started for a run that never took it (a usage error, a failure before the backend).
    discardUnusedGpuThread();
  }
}

/** Whether an error, or one of its causes, has this system error code. */
function causedBy(error: unknown, code: string): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    if ((e as NodeJS.ErrnoException).code === code) return true;
  }
  return false;
}

const standardStreams = { watched: false, stdoutClosed: false };

/**
 * A reader that went away (EPIPE) or a closed descriptor must not crash the process with
 * an unhandled 'error' event, even after main() returned (stdout's errors come a tick
 * later): the log's writer sees the same error on stdout and ends the run; on stderr
 * there is nobody left to tell.
 */
function watchStandardStreams(): void {
  if (standardStreams.watched) return;
  standardStreams.watched = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') standardStreams.stdoutClosed = true;
  });
  process.stderr.on('error', () => {});
}

/**
 * What a scoring run needs beyond this module (the pipeline, with its decoders, models and
 * backends, and the log writers): loaded once a run is asked for, so --help, --version, --list
 * and usage errors start without them. (A scoring command's options, validated by
 * run-args.ts, have loaded the pipeline already.)
 */
async function loadRunModules() {
  const [ladder, summary, writers] = await Promise.all([import('../pipeline/ladder.js'), import('../pipeline/summary.js'), import('../pipeline/writers/index.js')]);
  mark('run modules loaded');
  return { scoreLadderDeliveries: ladder.scoreLadderDeliveries, usesQc: ladder.usesQc, RunPooling: summary.RunPooling, createLogWriter: writers.createLogWriter };
}

/** One rendition's side of the run: its pooling and its log. */
interface RenditionRun {
  name: string;
  pooling: RunPooling;
  /** Where its log goes (its own file, or the combined stream). */
  out: NodeJS.WritableStream | undefined;
  label: string | undefined;
  writer: LogWriter | undefined;
}

async function run(args: CliArgs, hooks: RunHooks = {}): Promise<RunOutcome> {
  // SIGINT (Ctrl-C) and SIGTERM (service managers, container runtimes) end a run cleanly:
  // decoding stops, ffmpeg is stopped, and the logs close with what was scored. A second
  // signal while the logs are being finished ends the process at once.
  const outcome: RunOutcome = {};
  let stopScoring: (() => void) | undefined;
  let inputsClosed: Promise<void> | undefined;
  const onSignal = (signal: InterruptSignal) => {
    if (outcome.interruptedBy) process.exit(EXIT_STATUS[signal]);
    outcome.interruptedBy = signal;
    stopScoring?.();
  };
  for (const signal of INTERRUPT_SIGNALS) process.on(signal, onSignal);
  try {
    return await runUntilStopped(args, hooks, outcome, (stop) => {
      stopScoring = stop;
      if (outcome.interruptedBy) stop();
    }, (closed) => {
      inputsClosed = closed;
    });
  } finally {
    // The inputs' decoders are gone before the run returns (and the process may exit).
    await inputsClosed;
    for (const signal of INTERRUPT_SIGNALS) process.off(signal, onSignal);
  }
}

/** The run itself; `onStoppable` receives the function that ends the scoring early. */
async function runUntilStopped(
  args: CliArgs,
  hooks: RunHooks,
  outcome: RunOutcome,
  onStoppable: (stop: () => void) => void,
  onInputsClosed: (closed: Promise<void>) => void,
): Promise<RunOutcome> {
  const { scoreLadderDeliveries, usesQc, RunPooling, createLogWriter } = await loadRunModules();
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
  // The report's module (HTML, SVG) is loaded only by the runs that write one.
  const report = args.report !== undefined ? new (await import('../report/index.js')).ReportBuilder() : undefined;
  if (args.report !== undefined) {
    // Fail now rather than after a long live run: the report's folder must take a file.
    await access(dirname(resolve(args.report)), constants.W_OK).catch((error: unknown) => {
      throw new VmafError('E_OUTPUT', `cannot write the report ${args.report}: ${(error as Error).message}`, { cause: error });
    });
  }
  // The QC notices' module (and the QC modules it brings) only for runs that have QC.
  const notices = usesQc(args.score, args.renditions) ? await import('./qc-notices.js') : undefined;
  let backendText: string | undefined;
  let stopped = false;
  let runError: { error: unknown } | undefined;

  await new Promise<void>((resolve, reject) => {
    // An error in a QC callback (a log that cannot be written) ends the run.
    const guarded = <T>(fn: (value: T) => void) => (value: T) => {
      try {
        fn(value);
      } catch (error) {
        fail(error);
      }
    };
    const qc = notices?.qcNotices({
      note,
      writeRecord,
      who,
      guarded,
      alignRange: args.score.alignRange,
      onAlert: (a) => report?.addAlert({ rendition: a.rendition ?? runs[0]!.name, spec: a.spec, state: a.state, index: a.index, ...(a.pts !== undefined ? { pts: a.pts } : {}), value: a.value }),
    });
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
        // Stopping (a signal, a log that failed) cuts the inputs short: "ended before" is
        // then the stop, not news.
        onWarning: (message) => {
          if (!stopped) note(`warning: ${message}`);
        },
        onAggregate: (rendition, metrics) => runs.find((r) => r.name === rendition || !args.ladder)?.pooling.setAggregate(metrics),
        onFormat: (format) => {
          frameSize = { width: format.width, height: format.height };
        },
        onBackend: (backend) => {
          backendText = backend.description;
        },
        ...(hooks.exitAfterRun ? { exitAfterRun: true } : {}),
        onInputsClosed,
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
      // Once interrupted, a source that fails as it is stopped (ffmpeg got the terminal's
      // Ctrl-C too) is part of the stop, not an error.
      // A failure mid-run (an input, ffmpeg, the GPU) still closes the logs with the frames
      // scored before it; the error is raised after (exit 1: never reported as success).
      error: (error: unknown) => {
        if (!outcome.interruptedBy) runError = { error };
        stopped = true; // the inputs cut short by the failure are not news
        resolve();
      },
      complete: resolve,
    });
    const fail = (error: unknown) => {
      stopped = true;
      subscription.unsubscribe();
      reject(error);
    };
    onStoppable(() => {
      stopped = true;
      subscription.unsubscribe();
      resolve();
    });
  });

  if (!('progress' in hooks)) progress?.finish();
  logsClosed = true;
  if (runError) {
    // Only logs already started (a frame was written): the failure is what the user needs,
    // an output error while closing would hide it.
    for (const r of runs) {
      if (!r.writer) continue;
      await r.writer.end(r.pooling.summary(LOG_VERSION)).catch(() => {});
    }
    if (combined && combined !== process.stdout) {
      combined.end();
      await finished(combined as Writable).catch(() => {});
    }
    throw runError.error;
  }
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
  if (outcome.interruptedBy) {
    // Said even with -q: it explains the exit status.
    note(`interrupted by ${outcome.interruptedBy} after ${scoredText(summaries.map(({ run: r, summary }) => ({ name: r.name, frames: summary.frameCount })))}`);
  } else if (summaries.every(({ summary }) => summary.frameCount === 0)) {
    throw new VmafError('E_INPUT_EMPTY', 'no frames were scored');
  }
  if (!args.quiet || args.output === undefined) {
    // Model scores only, as libvmaf prints them; the features stay in the log. A ladder
    // prints each rendition's, its name first.
    for (const { run: r, summary } of summaries) {
      for (const [name, pooled] of Object.entries(summary.pooled)) {
        if (r.pooling.scoreNames.has(name)) stderr.write(`${hooks.scorePrefix ?? ''}${args.ladder ? `${r.name}: ` : ''}${name}: ${pooled.mean.toFixed(6)}\n`);
      }
    }
  }
  return outcome;
}

/** "708 frames", or per rendition where a ladder's differ ("1080p: 708, 720p: 707 frames"). */
function scoredText(counts: ReadonlyArray<{ name: string; frames: number }>): string {
  const frames = (n: number) => `${n} frame${n === 1 ? '' : 's'}`;
  const first = counts[0]?.frames ?? 0;
  if (counts.every((c) => c.frames === first)) return frames(first);
  return `${counts.map((c) => `${c.name}: ${c.frames}`).join(', ')} frames`;
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
