import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parseCommandLine, USAGE, type CliArgs } from './args.js';
import { ProgressLine } from './progress.js';
import { score } from '../pipeline/score.js';
import { RunPooling } from '../pipeline/summary.js';
import { createLogWriter } from '../pipeline/writers/index.js';
import type { LogWriter } from '../pipeline/writers/types.js';
import { UsageError, VmafError } from '../errors.js';
import { VERSION, LIBVMAF_VERSION } from '../version.js';

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
  const writer = args.output === undefined ? undefined : await openLog(args);
  const progress = stderr.isTTY && !args.quiet ? new ProgressLine(stderr, args.score.frameCnt) : undefined;
  const pooling = new RunPooling();

  await new Promise<void>((resolve, reject) => {
    const subscription = score(args.reference, args.distorted, {
      ...args.score,
      onWarning: (message) => stderr.write(`${progress ? '\n' : ''}vmaf-stream: warning: ${message}\n`),
    }).subscribe({
      next: (result) => {
        pooling.add(result);
        writer?.writeFrame(result);
        progress?.frameDone();
      },
      error: reject,
      complete: resolve,
    });
    // Ctrl-C on a live input ends the run cleanly: the logs still close with what was scored.
    process.once('SIGINT', () => {
      subscription.unsubscribe();
      resolve();
    });
  });

  progress?.finish();
  const summary = pooling.summary(VERSION);
  await writer?.end(summary);
  if (summary.frameCount === 0) throw new VmafError('E_INPUT_EMPTY', 'no frames were scored');
  if (!args.quiet || args.output === undefined) {
    const scoreNames = new Set<string>();
    // Only model scores are printed, as libvmaf does; features stay in the log.
    for (const name of Object.keys(summary.pooled)) if (!name.startsWith('integer_') && !name.startsWith('VMAF_')) scoreNames.add(name);
    for (const name of scoreNames) stderr.write(`${name}: ${summary.pooled[name]!.mean.toFixed(6)}\n`);
  }
}

async function openLog(args: CliArgs): Promise<LogWriter> {
  if (args.output === '-') return createLogWriter(args.format, process.stdout, { precision: args.precision });
  const out = createWriteStream(args.output!);
  try {
    await once(out, 'open');
  } catch (error) {
    throw new VmafError('E_OUTPUT', `cannot write the log ${args.output}: ${(error as Error).message}`, { cause: error });
  }
  return createLogWriter(args.format, out, { precision: args.precision });
}
