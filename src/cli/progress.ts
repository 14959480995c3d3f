/**
 * The progress line on standard error, as libvmaf draws it (frames, a spinner, fps),
 * plus an ETA when the frame count is known. Drawn only on a terminal.
 */
export class ProgressLine {
  private static readonly SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  private frames = 0;
  private readonly startedAt = performance.now();
  private lastDraw = 0;

  constructor(private readonly out: NodeJS.WriteStream, private expectedFrames?: number) {}

  /** More frames to expect (a queued title once planned; each title of a catalogue). */
  expect(frames: number): void {
    this.expectedFrames = (this.expectedFrames ?? 0) + frames;
  }

  frameDone(): void {
    this.frames++;
    const now = performance.now();
    // Redraw at most 10 times a second: a terminal is slower than the scoring.
    if (now - this.lastDraw < 100) return;
    this.lastDraw = now;
    this.draw(now);
  }

  finish(): void {
    if (this.frames > 0) {
      this.draw(performance.now());
      this.out.write('\n');
    }
  }

  private draw(now: number): void {
    const seconds = (now - this.startedAt) / 1000;
    const fps = seconds > 0 ? this.frames / seconds : 0;
    const spinner = ProgressLine.SPINNER[this.frames % ProgressLine.SPINNER.length];
    let line = `\r${this.frames} frame${this.frames === 1 ? ' ' : 's'} ${spinner} ${fps.toFixed(2)} FPS`;
    if (this.expectedFrames !== undefined && fps > 0 && this.frames < this.expectedFrames) {
      line += `, ETA ${formatDuration((this.expectedFrames - this.frames) / fps)}`;
    }
    this.out.write(`${line}\x1b[K`);
  }
}

function formatDuration(seconds: number): string {
  const s = Math.ceil(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
