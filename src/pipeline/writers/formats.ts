/**
 * The five log formats. json, xml, csv and sub reproduce libvmaf 3.2.0's output.c byte
 * for byte (given the same values; the header's fps aside), but streamed: the header
 * and each frame go out as soon as the frame is scored, the closing part in end().
 *
 * Where a stream can't know what libvmaf prints up front:
 * - JSON/XML header: `version` and `fps` come from the writer's options (see
 *   LogWriterOptions); the header is written with the first frame (or in end()).
 * - CSV header: the metric names of the first frame (libvmaf lists every metric it
 *   collected; for the same metrics on every frame that is the same row). A later frame
 *   lacking a column leaves it empty; metrics that appear later than the first frame are
 *   not in the CSV. With no frames at all the header lists the pooled metrics.
 * - JSON frame separator: libvmaf keys it on frameNum > 0; here it is "not the first
 *   frame written", the same for every log libvmaf writes and valid JSON for the rest.
 *
 * libvmaf's quirks are kept, so logs compare equal byte for byte: a non-finite per-frame
 * value in JSON prints `null` without the newline that follows other values (still valid
 * JSON); XML, CSV and SUB print non-finite values as printf does (`nan`, `inf`).
 *
 * Metric names are printed as they are, as libvmaf does, except where they sit inside a
 * quoted string: JSON keys are JSON-escaped, XML attribute values are XML-escaped, and CSV
 * header fields holding a comma, quote or line break are quoted (RFC 4180). None of this
 * changes libvmaf's names, which are plain identifiers.
 */
import { VmafError } from '../../errors.js';
import { formatFixed, formatNumber } from './printf.js';
import type { Sink } from './sink.js';
import type { FrameResult, LogFormat, LogWriter, PooledMetric, RunSummary } from './types.js';

const POOL_METHODS = ['min', 'max', 'mean', 'harmonic_mean'] as const satisfies readonly (keyof PooledMetric)[];

export interface HeaderInfo {
  version: string;
  fps: number;
  width: number;
  height: number;
}

/** Calls fn for every metric of a frame: features, then scores not already among them. */
function forEachMetric(result: FrameResult, fn: (name: string, value: number) => void): void {
  const { features, scores } = result;
  for (const name of Object.keys(features)) fn(name, features[name]!);
  for (const name of Object.keys(scores)) {
    if (!Object.hasOwn(features, name)) fn(name, scores[name]!);
  }
}

function metricNames(result: FrameResult): string[] {
  const names: string[] = [];
  forEachMetric(result, (name) => names.push(name));
  return names;
}

function metricValue(result: FrameResult, name: string): number | undefined {
  if (Object.hasOwn(result.features, name)) return result.features[name];
  if (Object.hasOwn(result.scores, name)) return result.scores[name];
  return undefined;
}

// Metric names repeat on every frame: each one's JSON form is made once (a bounded cache:
// a run has a few dozen names; past the bound, names are simply not cached).
const JSON_KEYS = new Map<string, string>();
const JSON_KEYS_MAX = 4096;
function jsonKey(name: string): string {
  let key = JSON_KEYS.get(name);
  if (key === undefined) {
    key = JSON.stringify(name);
    if (JSON_KEYS.size < JSON_KEYS_MAX) JSON_KEYS.set(name, key);
  }
  return key;
}

function xmlAttr(text: string): string {
  return text.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'));
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A frame index as C's %d prints it. */
function int(n: number): string {
  return String(Math.trunc(n));
}

abstract class BaseWriter implements LogWriter {
  abstract readonly format: LogFormat;
  protected framesWritten = 0;
  private ended = false;

  constructor(
    protected readonly sink: Sink,
    protected readonly precision: number | undefined,
  ) {}

  protected num(value: number): string {
    return formatNumber(value, this.precision);
  }

  /** A value where JSON wants one: libvmaf prints non-finite values as null. */
  protected jsonNum(value: number): string {
    return Number.isFinite(value) ? this.num(value) : 'null';
  }

  protected abstract frameText(result: FrameResult): string;
  protected abstract closingText(summary: RunSummary): string;

  writeFrame(result: FrameResult): boolean {
    if (this.ended) throw new VmafError('E_OUTPUT', 'writeFrame() after end(): the log was already ended');
    const text = this.frameText(result);
    this.framesWritten++;
    return this.sink.write(text);
  }

  ready(): Promise<void> {
    return this.sink.ready();
  }

  async end(summary: RunSummary): Promise<void> {
    if (this.ended) throw new VmafError('E_OUTPUT', 'end() called twice: the log was already ended');
    this.ended = true;
    await this.sink.close(this.closingText(summary));
  }
}

export class JsonWriter extends BaseWriter {
  readonly format = 'json';

  constructor(sink: Sink, precision: number | undefined, private readonly header: HeaderInfo) {
    super(sink, precision);
  }

  private headerText(): string {
    const fps = Number.isFinite(this.header.fps) ? formatFixed(this.header.fps, 2) : 'null';
    return `{\n  "version": ${JSON.stringify(this.header.version)},\n  "fps": ${fps},\n  "frames": [`;
  }

  protected frameText(result: FrameResult): string {
    let text = this.framesWritten === 0 ? this.headerText() + '\n' : ',\n';
    text += `    {\n      "frameNum": ${int(result.index)},\n      "metrics": {\n`;
    const names = metricNames(result);
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const value = metricValue(result, name)!;
      const comma = i < names.length - 1 ? ',' : '';
      text += Number.isFinite(value)
        ? `        ${jsonKey(name)}: ${this.num(value)}${comma}\n`
        : `        ${jsonKey(name)}: null${comma}`; // sic: libvmaf writes no newline here
    }
    return text + '      }\n    }';
  }

  protected closingText(summary: RunSummary): string {
    let text = this.framesWritten === 0 ? this.headerText() : '';
    text += '\n  ],\n  "pooled_metrics": {';
    let first = true;
    for (const [name, pooled] of Object.entries(summary.pooled)) {
      text += `${first ? '\n' : ',\n'}    ${jsonKey(name)}: {`;
      first = false;
      POOL_METHODS.forEach((method, j) => {
        text += `${j > 0 ? ',\n' : '\n'}      "${method}": ${this.jsonNum(pooled[method])}`;
      });
      text += '\n    }';
    }
    text += '\n  },\n  "aggregate_metrics": {';
    const aggregate = Object.entries(summary.aggregate ?? {});
    aggregate.forEach(([name, value], i) => {
      text += `\n    ${jsonKey(name)}: ${this.jsonNum(value)}${i < aggregate.length - 1 ? ',' : ''}`;
    });
    return text + '\n  }\n}\n';
  }
}

export class XmlWriter extends BaseWriter {
  readonly format = 'xml';

  constructor(sink: Sink, precision: number | undefined, private readonly header: HeaderInfo) {
    super(sink, precision);
  }

  private headerText(): string {
    const { version, width, height, fps } = this.header;
    return (
      `<VMAF version="${xmlAttr(version)}">\n` +
      `  <params qualityWidth="${int(width)}" qualityHeight="${int(height)}" />\n` +
      `  <fyi fps="${formatFixed(fps, 2)}" />\n` +
      '  <frames>\n'
    );
  }

  protected frameText(result: FrameResult): string {
    let text = this.framesWritten === 0 ? this.headerText() : '';
    text += `    <frame frameNum="${int(result.index)}" `;
    forEachMetric(result, (name, value) => {
      text += `${name}="${this.num(value)}" `;
    });
    return text + '/>\n';
  }

  protected closingText(summary: RunSummary): string {
    let text = this.framesWritten === 0 ? this.headerText() : '';
    text += '  </frames>\n  <pooled_metrics>\n';
    for (const [name, pooled] of Object.entries(summary.pooled)) {
      text += `    <metric name="${xmlAttr(name)}" `;
      for (const method of POOL_METHODS) text += `${method}="${this.num(pooled[method])}" `;
      text += '/>\n';
    }
    text += '  </pooled_metrics>\n  <aggregate_metrics ';
    for (const [name, value] of Object.entries(summary.aggregate ?? {})) text += `${name}="${this.num(value)}" `;
    return text + '/>\n</VMAF>\n';
  }
}

export class CsvWriter extends BaseWriter {
  readonly format = 'csv';
  private columns: string[] | undefined;

  private headerText(columns: string[]): string {
    let text = 'Frame,';
    for (const name of columns) text += `${csvField(name)},`;
    return text + '\n';
  }

  protected frameText(result: FrameResult): string {
    let text = '';
    if (!this.columns) {
      this.columns = metricNames(result);
      text = this.headerText(this.columns);
    }
    text += `${int(result.index)},`;
    for (const name of this.columns) {
      const value = metricValue(result, name);
      text += value === undefined ? ',' : `${this.num(value)},`;
    }
    return text + '\n';
  }

  protected closingText(summary: RunSummary): string {
    return this.columns ? '' : this.headerText(Object.keys(summary.pooled));
  }
}

export class SubWriter extends BaseWriter {
  readonly format = 'sub';

  protected frameText(result: FrameResult): string {
    const i = int(result.index);
    let text = `{${i}}{${int(result.index + 1)}}frame: ${i}|`;
    forEachMetric(result, (name, value) => {
      text += `${name}: ${this.num(value)}|`;
    });
    return text + '\n';
  }

  protected closingText(): string {
    return '';
  }
}

/**
 * NDJSON: one JSON object per line, written as soon as the frame is scored, so a reader
 * can follow the run live (`tail -f`, a pipe) and parse each line on its own:
 *
 *   {"frameNum":0,"refPts":0,"disPts":0,"metrics":{"integer_adm2":0.988316,…,"vmaf":93.913917}}
 *   …
 *   {"version":"0.1.0","fps":512.34,"frameCount":48,"pooled_metrics":{"vmaf":{"min":…,"max":…,"mean":…,"harmonic_mean":…},…},"aggregate_metrics":{}}
 *
 * Frame lines have `frameNum` and `metrics` (the same names and order as the JSON log),
 * plus `refPts`/`disPts` in seconds where the sources know them (shortest round-trip
 * form). The last line, written by end(), is the summary: it has `pooled_metrics` and no
 * `frameNum`. Metric values follow the precision option as in the other formats; `fps`
 * is `%.2f`; non-finite values are `null`.
 *
 * With a `rendition` name (a ladder's combined log: several writers on one stream), every
 * line starts with it: `{"rendition":"720p","frameNum":0,…}`, `{"rendition":"720p","version":…}`.
 */
export class NdjsonWriter extends BaseWriter {
  readonly format = 'ndjson';
  private readonly lineStart: string;

  constructor(sink: Sink, precision: number | undefined, rendition?: string) {
    super(sink, precision);
    this.lineStart = rendition === undefined ? '{' : `{"rendition":${JSON.stringify(rendition)},`;
  }

  protected frameText(result: FrameResult): string {
    let text = `${this.lineStart}"frameNum":${int(result.index)}`;
    if (result.refPts !== undefined) text += `,"refPts":${ptsText(result.refPts)}`;
    if (result.disPts !== undefined) text += `,"disPts":${ptsText(result.disPts)}`;
    text += ',"metrics":{';
    let first = true;
    forEachMetric(result, (name, value) => {
      text += `${first ? '' : ','}${jsonKey(name)}:${this.jsonNum(value)}`;
      first = false;
    });
    return text + '}}\n';
  }

  /**
   * Writes one more line, `record` as JSON (a window, an alert, an alignment: lines with a
   * `type`), between the frame lines. Returns false as writeFrame does.
   */
  writeRecord(record: object): boolean {
    return this.sink.write(`${JSON.stringify(record)}\n`);
  }

  protected closingText(summary: RunSummary): string {
    const fps = Number.isFinite(summary.fps) ? formatFixed(summary.fps, 2) : 'null';
    let text = `${this.lineStart}"version":${JSON.stringify(summary.version)},"fps":${fps},"frameCount":${int(summary.frameCount)},"pooled_metrics":{`;
    let first = true;
    for (const [name, pooled] of Object.entries(summary.pooled)) {
      text += `${first ? '' : ','}${jsonKey(name)}:{`;
      text += POOL_METHODS.map((method) => `"${method}":${this.jsonNum(pooled[method])}`).join(',');
      text += '}';
      first = false;
    }
    text += '},"aggregate_metrics":{';
    text += Object.entries(summary.aggregate ?? {})
      .map(([name, value]) => `${jsonKey(name)}:${this.jsonNum(value)}`)
      .join(',');
    return text + '}}\n';
  }
}

function ptsText(pts: number): string {
  return Number.isFinite(pts) ? String(pts) : 'null';
}
