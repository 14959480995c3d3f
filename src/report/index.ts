/** The HTML report (`--report out.html`): a bounded-memory collector and a self-contained page. */
export { ReportBuilder, alertBands, alertMetric, specText } from './html-report.js';
export type { ReportAlert, ReportRendition, ReportSummary, ReportBuilderOptions, AlertBand } from './html-report.js';
export { MinMaxSeries, DEFAULT_MAX_POINTS, type SeriesPoint } from './series.js';
export { escapeHtml, linearScale, niceStep, niceTicks, niceExtent, linePath, timeAt, formatTime, formatScore, formatCoordinate } from './svg.js';
