/**
 * Frame alignment (issue "Live transcoder QC"): one entry point for the pipeline.
 *
 * - lumaPsnr / framePsnr: luma PSNR of two pictures (src/align/luma-psnr.ts);
 * - searchOffset: the offset between two inputs from their first frames (offset-search.ts);
 * - alignPairs: pairFrames with that offset applied, searched ('auto') or given (align-pairs.ts);
 * - DriftMonitor: watches pairs and per-frame scores, and reports dropped / repeated frames
 *   and offset changes while the stream runs (drift-monitor.ts).
 */
export * from '../align/luma-psnr.js';
export * from '../align/offset-search.js';
export * from '../align/align-pairs.js';
export * from '../align/drift-monitor.js';
