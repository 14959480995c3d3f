/**
 * Start-up phase timestamps, for finding what holds up the first frame: with
 * VMAF_STREAM_TRACE=1 each mark() writes "vmaf-stream: trace <ms> <phase>" on stderr, the
 * milliseconds since the process started (performance.now(): Node's own start-up counts).
 * Off, a mark costs one boolean test.
 */
const enabled = /^(1|true|yes)$/i.test(process.env.VMAF_STREAM_TRACE ?? '');
if (enabled) process.on('exit', () => mark('exit'));

/** Whether marks are written (VMAF_STREAM_TRACE). */
export function tracing(): boolean {
  return enabled;
}

/** Notes that `phase` was reached now. */
export function mark(phase: string): void {
  if (enabled) process.stderr.write(`vmaf-stream: trace ${performance.now().toFixed(1)} ${phase}\n`);
}
