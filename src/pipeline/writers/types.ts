import type { FeatureValues } from '../../types.js';

/** One scored frame. A log line lists `features` then `scores`, each in insertion order. */
export interface FrameResult {
  /** frameNum in the logs. */
  index: number;
  features: FeatureValues;
  /** Model outputs keyed by the model's log name (`vmaf`, `vmaf_neg`, …). */
  scores: Record<string, number>;
  /** Presentation times in seconds, where the sources know them (NDJSON logs only). */
  refPts?: number;
  disPts?: number;
}

/** libvmaf's four pooling methods, in the order its logs print them. */
export interface PooledMetric {
  min: number;
  max: number;
  mean: number;
  harmonic_mean: number;
}

export interface RunSummary {
  /** vmaf-stream's version; printed by the NDJSON summary line. */
  version: string;
  /** Frames scored per second over the run; printed by the NDJSON summary line. */
  fps: number;
  frameCount: number;
  /** Per metric, in the order the logs list metrics. */
  pooled: Record<string, PooledMetric>;
  /** libvmaf's aggregate_metrics (empty in libvmaf 3.2.0's own runs). */
  aggregate?: Record<string, number>;
}

export type LogFormat = 'json' | 'xml' | 'csv' | 'sub' | 'ndjson';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'xml', 'csv', 'sub', 'ndjson'];

export interface LogWriterOptions {
  /**
   * Digits of metric values. Undefined: libvmaf 3.2.0's own formatting (`%.6f`, or
   * `%.16f` for values whose fraction has more than 6 leading zeros). 1 to 17:
   * `%.{precision}g`; 17 round-trips every double.
   */
  precision?: number;
  /**
   * The JSON `version` field and XML `<VMAF version>` attribute, written before the
   * first frame. Default: vmaf-stream's version.
   */
  version?: string;
  /**
   * The JSON `fps` field and XML `<fyi fps>` attribute. libvmaf prints its processing
   * speed there, known only at the end; a streaming log writes its header before the
   * first frame, so it prints this value, or, when it is not given, what libvmaf prints
   * for a non-finite fps: JSON `null`, XML `nan`. (The NDJSON summary line carries the
   * measured RunSummary.fps.)
   */
  fps?: number;
  /** XML `<params qualityWidth qualityHeight>`. Default 0. */
  width?: number;
  height?: number;
  /**
   * Whether end() ends `out` (and waits for 'finish', and 'close' for file streams).
   * Default: true, except for process.stdout and process.stderr, which are never ended;
   * end() then waits until every chunk written has been handed to the system.
   */
  end?: boolean;
  /** Names the destination in error messages (a path, or '-'). */
  label?: string;
  /**
   * NDJSON only: every line (frames and the summary) starts with `"rendition":NAME`, so
   * the lines of several renditions can share one stream (a ladder's combined log).
   */
  rendition?: string;
}

/**
 * Writes one log as a stream: each frame's part as soon as writeFrame() is called, the
 * closing part (pooled metrics etc.) in end(). Memory stays bounded however long the run.
 */
export interface LogWriter {
  readonly format: LogFormat;
  /**
   * Writes one frame's part at once. Returns false when `out` is over its high-water
   * mark: the caller should then await ready() before writing more (like stream.write).
   * Throws a VmafError (E_OUTPUT) once `out` has failed.
   */
  writeFrame(result: FrameResult): boolean;
  /** Resolves once `out` has drained (at once if it is not backed up); rejects if it failed. */
  ready(): Promise<void>;
  /** Writes the closing part and resolves once everything is flushed. Call once. */
  end(summary: RunSummary): Promise<void>;
}
