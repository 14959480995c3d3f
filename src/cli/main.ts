import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { parseCommandLine, USAGE, type CliArgs } from './args.js';
import { ProgressLine } from './progress.js';
import { scoreLadderDeliveries } from '../pipeline/ladder.js';
import { RunPooling } from '../pipeline/summary.js';
import { createLogWriter } from '../pipeline/writers/index.js';
import type { LogWriter } from '../pipeline/writers/types.js';
import { UsageError, VmafError } from '../errors.js';
import { VERSION, LIBVMAF_VERSION } from '../version.js';

/** The log's version field: libvmaf's schema version, and who wrote it. */
const LOG_VERSION = `${LIBVMAF_VERSION}+vmaf-stream.${VERSION}`;

/** Runs the command line; resolves to the exit status (0 done, 1 input/runtime error, 2 usage). */
export async function main(argv: string[]): Promise<number> {
  try {
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

/** One rendition's side of the run: its pooling and its log. */
interface RenditionRun {
  name: string;
  pooling: RunPooling;
  /** Where its log goes (its own file, or the combined stream). */
  out: NodeJS.WritableStream | undefined;
  label: string | undefined;
  writer: LogWriter | undefined;
}

async function run(args: CliArgs): Promise<void> {
  const stderr = process.stderr;
  const progress = stderr.isTTY && !args.quiet ? new ProgressLine(stderr, args.score.frameCnt) : undefined;
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

  await new Promise<void>((resolve, reject) => {
    const subscription = scoreLadderDeliveries(
      args.reference,
      args.renditions.map((r) => ({ input: r.path, name: r.name, ...(r.frameSkip !== undefined ? { frameSkip: r.frameSkip } : {}) })),
      {
        ...args.score,
        onWarning: (message) => stderr.write(`${progress ? '\n' : ''}vmaf-stream: warning: ${message}\n`),
        onFormat: (format) => {
          frameSize = { width: format.width, height: format.height };
        },
      },
    ).subscribe({
      next: ({ result: { rendition, result }, delivered }) => {
        const r = byName.get(rendition)!;
        r.pooling.add(result);
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

  progress?.finish();
  const summaries = runs.map((r) => ({ run: r, summary: r.pooling.summary(LOG_VERSION) }));
  for (const { run: r, summary } of summaries) if (r.out) await writerFor(r).end(summary);
  if (combined && combined !== process.stdout) {
    combined.end();
    await finished(combined as Writable).catch((error: unknown) => {
      throw new VmafError('E_OUTPUT', `cannot write the log ${args.output}: ${(error as Error).message}`, { cause: error });
    });
  }
  if (summaries.every(({ summary }) => summary.frameCount === 0)) throw new VmafError('E_INPUT_EMPTY', 'no frames were scored');
  if (!args.quiet || args.output === undefined) {
    // Model scores only, as libvmaf prints them; the features stay in the log. A ladder
    // prints each rendition's, its name first.
    for (const { run: r, summary } of summaries) {
      for (const [name, pooled] of Object.entries(summary.pooled)) {
        if (!isFeatureName(name)) stderr.write(`${args.ladder ? `${r.name}: ` : ''}${name}: ${pooled.mean.toFixed(6)}\n`);
      }
    }
  }
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
