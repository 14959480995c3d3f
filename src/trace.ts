/**
 * Start-up phase timestamps, for finding what holds up the first frame: with
 * VMAF_STREAM_TRACE=1 each mark() writes "vmaf-stream: trace <ms> <phase>" on stderr, the
 * milliseconds since the process started (Node's own start-up counts), on the gpu thread too
 * (kernels/gpu-thread: a worker's performance.now() counts from the worker's start, so it is
 * given the main thread's origin). Off, a mark costs one boolean test.
 */
import { getEnvironmentData, isMainThread, setEnvironmentData } from 'node:worker_threads';

const enabled = /^(1|true|yes)$/i.test(process.env.VMAF_STREAM_TRACE ?? '');
const ORIGIN_KEY = 'vmaf-stream trace origin';
if (enabled && isMainThread) setEnvironmentData(ORIGIN_KEY, performance.timeOrigin);
/** This thread's performance.now() less the process's start, in ms. */
const offset = enabled && !isMainThread ? performance.timeOrigin - Number(getEnvironmentData(ORIGIN_KEY) ?? performance.timeOrigin) : 0;
if (enabled && isMainThread) process.on('exit', () => mark('exit'));

/** Whether marks are written (VMAF_STREAM_TRACE). */
export function tracing(): boolean {
  return enabled;
}

/** Notes that `phase` was reached now. */
export function mark(phase: string): void {
  if (enabled) process.stderr.write(`vmaf-stream: trace ${(performance.now() + offset).toFixed(1)} ${phase}${isMainThread ? '' : ' (gpu thread)'}\n`);
}
