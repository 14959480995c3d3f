/** The `queue` option of a run (score(), scoreLadder(), the CLI's --queue). */
export interface QueueOptions {
  /** Redis URL: redis://HOST:PORT, rediss://, with a password (ioredis's forms). */
  url: string;
  /** Segment length: frames (600), or a string '600' / '20s'. Default 3000 frames. */
  segment?: number | string;
  /** Attempts per segment before the title fails (default 3). */
  attempts?: number;
  /** How long to wait for an unreachable Redis before failing (default 60000 ms). */
  redisTimeoutMs?: number;
  /** Called once the title is planned: its frames and segments. */
  onPlan?: (plan: { titleId: string; frames: number; segments: number }) => void;
  /** Called as each segment is merged. */
  onSegment?: (info: { position: number; frames: number; worker: string; extraFrames: number }) => void;
}
