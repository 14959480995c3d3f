/**
 * The contract between the CLI's run of one title (main.ts) and the subcommands that run
 * several (submit): a function to call, and what those runs share.
 */
import type { CliArgs } from './args.js';
import type { ProgressLine } from './progress.js';

/** What a caller that runs several titles at once (submit) shares between them. */
export interface RunHooks {
  /** One progress line for all of them (instead of one per run). */
  progress?: ProgressLine | undefined;
  /** Printed before each pooled score: which title it is. */
  scorePrefix?: string;
  /** The process exits once the run is over (ScoreOptions.exitAfterRun). */
  exitAfterRun?: boolean;
}

/** The command line's run: score, write the logs, print the pooled scores. */
export type RunCommand = (args: CliArgs, hooks?: RunHooks) => Promise<unknown>;
