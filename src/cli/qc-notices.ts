/**
 * The command line's live QC notices: each window, alert, alignment and drift report as a
 * line on stderr and a record in the NDJSON log. Loaded (with the QC modules it imports) only
 * by runs that ask for QC (main.ts; usesQc).
 */
import { windowLine } from '../pipeline/windows.js';
import { alertLine, type AlertEvent } from '../pipeline/alerts.js';
import { alignmentLine, alignmentText, driftLine, driftText, type QcOptions } from '../pipeline/qc.js';
import { DEFAULT_SEARCH_RANGE } from '../align/align-pairs.js';

/** Where the notices go. */
export interface NoticeSinks {
  /** A line on stderr. */
  note(text: string): void;
  /** A record in the rendition's NDJSON log. */
  writeRecord(rendition: string | undefined, record: object): void;
  /** The rendition's prefix for a stderr line ('' for a single pair). */
  who(rendition: string | undefined): string;
  /** Wraps a callback: its error ends the run. */
  guarded<T>(fn: (value: T) => void): (value: T) => void;
  /** Each alert, after its line and record (the HTML report's). */
  onAlert?: ((a: AlertEvent) => void) | undefined;
  /** --align-range. */
  alignRange: number | undefined;
}

export function qcNotices(s: NoticeSinks): Pick<QcOptions, 'onWindow' | 'onAlert' | 'onAlignment' | 'onDrift'> {
  return {
    onWindow: s.guarded((w) => s.writeRecord(w.rendition, windowLine(w))),
    onAlert: s.guarded((a) => {
      // Alerts are what a live QC run is for: printed even with -q.
      s.note(alertText(a, s.who(a.rendition)));
      s.writeRecord(a.rendition, alertLine(a));
      s.onAlert?.(a);
    }),
    onAlignment: s.guarded((a) => {
      s.note(`${s.who(a.rendition)}${alignmentText(a, s.alignRange ?? DEFAULT_SEARCH_RANGE)}`);
      s.writeRecord(a.rendition, alignmentLine(a));
    }),
    onDrift: s.guarded((d) => {
      const text = driftText(d);
      if (text !== undefined) s.note(`${s.who(d.rendition)}${text}`);
      s.writeRecord(d.rendition, driftLine(d));
    }),
  };
}

/** An alert's line on stderr. */
function alertText(a: AlertEvent, who: string): string {
  const subject = a.stat !== undefined ? `${a.stat}(${a.metric})` : a.metric;
  const at = (index: number, pts?: number) => `frame ${index}${pts !== undefined ? ` (${pts.toFixed(3)} s)` : ''}`;
  const value = Number.isFinite(a.value) ? a.value.toFixed(3) : String(a.value);
  const spec = who !== '' && a.spec.startsWith(who.slice(0, -1)) ? a.spec : `${who}${a.spec}`;
  return a.state === 'start'
    ? `alert: ${spec}: started at ${at(a.index, a.pts)}, ${subject} ${value}, holding since ${at(a.since.index, a.since.pts)}`
    : `alert: ${spec}: cleared at ${at(a.index, a.pts)}, ${subject} ${value}`;
}
