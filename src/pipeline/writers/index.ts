import { UsageError } from '../../errors.js';
import { VERSION } from '../../version.js';
import { CsvWriter, JsonWriter, NdjsonWriter, SubWriter, XmlWriter, type HeaderInfo } from './formats.js';
import { Sink } from './sink.js';
import { LOG_FORMATS, type LogFormat, type LogWriter, type LogWriterOptions } from './types.js';

export type { FrameResult, LogFormat, LogWriter, LogWriterOptions, PooledMetric, RunSummary } from './types.js';
export { LOG_FORMATS } from './types.js';
export { formatFixed, formatGeneral, formatNumber, libvmafLeadingZeros } from './printf.js';

/** The highest `precision` accepted: %.17g already round-trips every double. */
export const MAX_PRECISION = 17;

/**
 * A streaming log writer for `format` on `out`. Throws UsageError for an unknown format
 * or a precision that isn't an integer from 1 to 17.
 */
export function createLogWriter(format: LogFormat, out: NodeJS.WritableStream, options: LogWriterOptions = {}): LogWriter {
  const { precision } = options;
  if (precision !== undefined && (!Number.isInteger(precision) || precision < 1 || precision > MAX_PRECISION)) {
    throw new UsageError(`precision must be an integer from 1 to ${MAX_PRECISION}, got ${String(precision)}`);
  }
  if (!LOG_FORMATS.includes(format)) {
    throw new UsageError(`unknown log format ${JSON.stringify(format)}; expected one of ${LOG_FORMATS.join(', ')}`);
  }
  const endOut = options.end ?? (out !== process.stdout && out !== process.stderr);
  const sink = new Sink(out, endOut, options.label);
  const header: HeaderInfo = {
    version: options.version ?? VERSION,
    fps: options.fps ?? Number.NaN,
    width: options.width ?? 0,
    height: options.height ?? 0,
  };
  switch (format) {
    case 'json':
      return new JsonWriter(sink, precision, header);
    case 'xml':
      return new XmlWriter(sink, precision, header);
    case 'csv':
      return new CsvWriter(sink, precision);
    case 'sub':
      return new SubWriter(sink, precision);
    case 'ndjson':
      return new NdjsonWriter(sink, precision, options.rendition);
  }
}
