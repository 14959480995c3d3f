/**
 * vmaf-stream's library API. One run, four ways to consume it:
 *   score()        an RxJS Observable of per-frame results
 *   scoreIterator() an async iterator
 *   scoreStream()   a Node Readable in object mode
 *   scoreEvents()   an emitter of typed `frame`, `end` and `error` events
 * and the same four for a ladder (one reference, several renditions, the reference decoded
 * once): scoreLadder(), scoreLadderIterator(), scoreLadderStream(), scoreLadderEvents().
 */
import type { Readable } from 'node:stream';
import type { Observable } from 'rxjs';
import type { FrameInput } from './decode/open-source.js';
import { score, scoreDeliveries, type ScoreOptions } from './pipeline/score.js';
import { scoreLadder, scoreLadderDeliveries, type LadderOptions, type LadderResult, type RenditionInput } from './pipeline/ladder.js';
import { LadderEmitter, ScoreEmitter, toAsyncIterator, toReadable, withQcEvents, emitOn } from './pipeline/run-views.js';
import type { FrameResult } from './pipeline/writers/types.js';

export { score, scoreLadder };
export type { ScoreOptions, FrameInput };
export type { LadderOptions, LadderResult, Rendition, RenditionInput } from './pipeline/ladder.js';
export { ScoreEmitter, LadderEmitter, type ScoreEventMap, type LadderEventMap, type QcEventMap } from './pipeline/run-views.js';
// Live QC: rolling windows, alerts, alignment, drift (as options of a run, or as operators to compose).
export {
  rollingWindows,
  windowLine,
  parseSpan,
  type RollingWindowSpec,
  type WindowStats,
  type WindowLine,
  type Span,
  type SpanInput,
  type RenditionResult,
} from './pipeline/windows.js';
export { alerts, alertLine, parseAlertSpec, type AlertSpec, type AlertEvent, type AlertLine, type AlertOptions, type Comparator, type AlertStat } from './pipeline/alerts.js';
export {
  alignmentLine,
  driftLine,
  type QcOptions,
  type WindowOptions,
  type AlignmentNotice,
  type DriftNotice,
  type AlignmentLine,
  type DriftLine,
  type AlignMode,
  type AlignmentReport,
  type DriftEvent,
  type DriftEventKind,
  type DriftMonitorOptions,
} from './pipeline/qc.js';
export { alignPairs, alignSources, searchOffset, DriftMonitor, type AlignPairsOptions, type AlignSourcesOptions, type AlignedSources, type OffsetSearchResult } from './pipeline/align.js';
export { ReportBuilder, type ReportAlert, type ReportRendition, type ReportSummary, type ReportBuilderOptions } from './report/index.js';
export { RunPooling } from './pipeline/summary.js';
export type { FrameResult, RunSummary, PooledMetric, LogFormat, LogWriter } from './pipeline/writers/types.js';
export { createLogWriter } from './pipeline/writers/index.js';
export { loadModel, parseModelSpec, type Model, type ModelSpec } from './pipeline/model/index.js';
export { PooledStats } from './pipeline/pooling.js';
export { openFrameSource } from './decode/open-source.js';
export { transcodeInput, isFluentCommand, TranscodeInput, type TranscodeInputOptions, type FluentCommand } from './decode/fluent-command.js';
export { pairFrames, groupFrames } from './decode/pair-frames.js';
export type { Frame, FrameFormat, FrameSource, FramePair, FrameGroup, FeatureValues, FrameFeatures, GroupFeatures, Plane, PlaneSize, PlaneSelection } from './types.js';
export { chromaSize } from './decode/frame-layout.js';
export { widenFrame, WidenedSource } from './decode/bit-depth.js';
export type { FeatureBackend, BackendKind } from './kernels/backend.js';
export { VmafError, UsageError, InputError, ModelError, BackendError, type VmafErrorCode } from './errors.js';
export { VERSION, LIBVMAF_VERSION } from './version.js';

export function scoreIterator(reference: FrameInput, distorted: FrameInput, options?: ScoreOptions): AsyncIterableIterator<FrameResult> {
  return toAsyncIterator(scoreDeliveries(reference, distorted, options));
}

export function scoreStream(reference: FrameInput, distorted: FrameInput, options?: ScoreOptions): Readable {
  return toReadable(scoreDeliveries(reference, distorted, options));
}

/** score() as typed events: `frame`, `end`, `error`, and the QC events `window`, `alert`, `alignment`, `drift`. */
export function scoreEvents(reference: FrameInput, distorted: FrameInput, options?: ScoreOptions): ScoreEmitter {
  let emitter: ScoreEmitter | undefined;
  const withAggregates = { ...options, onAggregate: (name: string, metrics: Record<string, number>) => (emitter!.aggregate(name, metrics), options?.onAggregate?.(name, metrics)) };
  emitter = new ScoreEmitter(score(reference, distorted, withQcEvents(withAggregates, emitOn(() => emitter!))) as Observable<FrameResult>);
  return emitter;
}

/** scoreLadder() as an async iterator of { rendition, result }; a slow consumer pauses decoding. */
export function scoreLadderIterator(reference: FrameInput, renditions: readonly RenditionInput[], options?: LadderOptions): AsyncIterableIterator<LadderResult> {
  return toAsyncIterator(scoreLadderDeliveries(reference, renditions, options));
}

/** scoreLadder() as a Readable in object mode, one { rendition, result } per chunk. */
export function scoreLadderStream(reference: FrameInput, renditions: readonly RenditionInput[], options?: LadderOptions): Readable {
  return toReadable(scoreLadderDeliveries(reference, renditions, options));
}

/**
 * scoreLadder() as events: `frame` ({ rendition, result }), `end` (summaries by rendition
 * name), `error`, and the QC events `window`, `alert`, `alignment`, `drift` (each with its rendition).
 */
export function scoreLadderEvents(reference: FrameInput, renditions: readonly RenditionInput[], options?: LadderOptions): LadderEmitter {
  let emitter: LadderEmitter | undefined;
  const withAggregates = { ...options, onAggregate: (name: string, metrics: Record<string, number>) => (emitter!.aggregate(name, metrics), options?.onAggregate?.(name, metrics)) };
  emitter = new LadderEmitter(scoreLadder(reference, renditions, withQcEvents(withAggregates, emitOn(() => emitter!))));
  return emitter;
}
