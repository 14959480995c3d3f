import { PooledStats } from './pooling.js';
import type { FrameResult, PooledMetric, RunSummary } from './writers/types.js';

/**
 * Pools every metric of a run as its frames go by (O(1) memory per metric), in frame
 * order as libvmaf does, and builds the closing summary the logs and the CLI print.
 */
export class RunPooling {
  private readonly stats = new Map<string, PooledStats>();
  private frames = 0;
  private aggregate: Record<string, number> | undefined;
  /** The model scores' names (the other pooled metrics are features). */
  readonly scoreNames = new Set<string>();
  private readonly startedAt = performance.now();

  add(result: FrameResult): void {
    this.frames++;
    for (const [name, value] of Object.entries(result.features)) this.statsFor(name).add(value);
    for (const [name, value] of Object.entries(result.scores)) {
      this.scoreNames.add(name);
      this.statsFor(name).add(value);
    }
  }

  /** The run's aggregate metrics (libvmaf's aggregate_metrics), where an extractor gives some. */
  setAggregate(metrics: Record<string, number>): void {
    this.aggregate = { ...this.aggregate, ...metrics };
  }

  get frameCount(): number {
    return this.frames;
  }

  summary(version: string): RunSummary {
    const pooled: Record<string, PooledMetric> = {};
    for (const [name, stats] of this.stats) pooled[name] = stats.result();
    const seconds = (performance.now() - this.startedAt) / 1000;
    const summary: RunSummary = { version, fps: seconds > 0 ? this.frames / seconds : 0, frameCount: this.frames, pooled };
    if (this.aggregate) summary.aggregate = this.aggregate;
    return summary;
  }

  private statsFor(name: string): PooledStats {
    let stats = this.stats.get(name);
    if (!stats) {
      stats = new PooledStats();
      this.stats.set(name, stats);
    }
    return stats;
  }
}
