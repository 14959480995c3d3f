import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parseCommandLine, USAGE, type CliArgs } from './args.js';
import { ProgressLine } from './progress.js';
import { scoreDeliveries } from '../pipeline/score.js';
import { RunPooling } from '../pipeline/summary.js';
import { createLogWriter } from '../pipeline/writers/index.js';
import type { LogWriter, LogWriterOptions } from '../pipeline/writers/types.js';
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

async function run(args: CliArgs): Promise<void> {
  const stderr = process.stderr;
  const progress = stderr.isTTY && !args.quiet ? new ProgressLine(stderr, args.score.frameCnt) : undefined;
  const pooling = new RunPooling();
  // The log's header names the frame size, known once the reference is open.
  let logOptions: LogWriterOptions | undefined;
  let writer: LogWriter | undefined;
  const out = args.output === undefined ? undefined : await openOutput(args.output);

  await new Promise<void>((resolve, reject) => {
    const subscription = scoreDeliveries(args.reference, args.distorted, {
      ...args.score,
      onWarning: (message) => stderr.write(`${progress ? '\n' : ''}vmaf-stream: warning: ${message}\n`),
      onFormat: (format) => {
        logOptions = { precision: args.precision, version: LOG_VERSION, width: format.width, height: format.height, label: args.output };
      },
    }).subscribe({
      next: ({ result, delivered }) => {
        pooling.add(result);
        progress?.frameDone();
        if (!out) return delivered();
        try {
          writer ??= createLogWriter(args.format, out, logOptions ?? { precision: args.precision, version: LOG_VERSION, label: args.output });
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
  const summary = pooling.summary(LOG_VERSION);
  if (out) {
    writer ??= createLogWriter(args.format, out, logOptions ?? { precision: args.precision, version: LOG_VERSION, label: args.output });
    await writer.end(summary);
  }
  if (summary.frameCount === 0) throw new VmafError('E_INPUT_EMPTY', 'no frames were scored');
  if (!args.quiet || args.output === undefined) {
    // Model scores only, as libvmaf prints them; the features stay in the log.
    for (const [name, pooled] of Object.entries(summary.pooled)) {
      if (!isFeatureName(name)) stderr.write(`${name}: ${pooled.mean.toFixed(6)}\n`);
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
