/**
 * A counting semaphore. The pipeline takes a credit before it pulls the next frame pair
 * and gives it back when that frame's score has been delivered, so the number of frames
 * in flight (decoded, computing, or waiting for a slow consumer) never exceeds the limit.
 */
export class Credits {
  private available: number;
  private readonly waiters: Array<() => void> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`credit limit must be a positive integer, got ${limit}`);
    this.available = limit;
  }

  acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }
}
