/**
 * A catalogue for `vmaf-stream submit`: titles as a JSON array (or NDJSON), each turned into
 * the command line that scores it, so a title in a catalogue means exactly what that command
 * means (same defaults, same checks, same logs).
 */
import { UsageError } from '../errors.js';

export interface CatalogueRendition {
  path: string;
  name?: string;
  skip?: number;
}

export interface CatalogueTitle {
  reference?: string;
  distorted?: string | Array<string | CatalogueRendition>;
  output?: string;
  format?: 'xml' | 'json' | 'csv' | 'sub' | 'ndjson';
  models?: string[];
  precision?: number;
  frame_cnt?: number;
  frame_skip_ref?: number;
  frame_skip_dist?: number;
  subsample?: number;
  no_prediction?: boolean;
  scale?: boolean;
  segment?: number | string;
  /** A whole command line instead of the keys above. */
  args?: string[];
}

const FORMATS = ['xml', 'json', 'csv', 'sub', 'ndjson'];

export function parseCatalogue(text: string, label: string): CatalogueTitle[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new UsageError(`${label}: the batch is empty`);
  let titles: unknown;
  try {
    titles = trimmed.startsWith('[') ? JSON.parse(trimmed) : trimmed.split(/\r?\n/).filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as unknown);
  } catch (error) {
    throw new UsageError(`${label}: not JSON (an array of titles, or one title a line): ${(error as Error).message}`);
  }
  if (!Array.isArray(titles) || titles.length === 0) throw new UsageError(`${label}: expected a list of titles`);
  for (const [k, t] of titles.entries()) {
    if (typeof t !== 'object' || t === null || Array.isArray(t)) throw new UsageError(`${label}: title ${k + 1} is not an object`);
  }
  return titles as CatalogueTitle[];
}

/** The command line of one title, with the queue (and the batch's segment length unless the title has its own). */
export function catalogueArgv(title: CatalogueTitle, queue: string, segment: string | undefined, where: string): string[] {
  const argv: string[] = [];
  if (title.args !== undefined) {
    if (!Array.isArray(title.args) || title.args.some((a) => typeof a !== 'string')) throw new UsageError(`${where}: args must be a list of strings`);
    argv.push(...title.args);
  } else {
    if (typeof title.reference !== 'string') throw new UsageError(`${where}: missing "reference"`);
    argv.push('-r', title.reference);
    const distorted = typeof title.distorted === 'string' ? [title.distorted] : title.distorted;
    if (!Array.isArray(distorted) || distorted.length === 0) throw new UsageError(`${where}: missing "distorted"`);
    for (const d of distorted) {
      if (typeof d === 'string') argv.push('-d', d);
      else if (typeof d === 'object' && d !== null && typeof d.path === 'string') {
        argv.push('-d', `${d.name !== undefined ? `name=${d.name}:` : ''}${d.skip !== undefined ? `skip=${d.skip}:` : ''}path=${d.path}`);
      } else throw new UsageError(`${where}: a distorted entry must be a path or {name, path, skip}`);
    }
    const format = title.format ?? (title.output !== undefined ? /\.(xml|json|csv|sub|ndjson)$/i.exec(title.output)?.[1]?.toLowerCase() : undefined);
    if (format !== undefined) {
      if (!FORMATS.includes(format)) throw new UsageError(`${where}: unknown format "${format}"`);
      argv.push(`--${format}`);
    }
    if (title.output !== undefined) argv.push('-o', title.output);
    for (const m of title.models ?? []) argv.push('-m', m);
    const numbers: Array<[keyof CatalogueTitle, string]> = [
      ['precision', '--precision'],
      ['frame_cnt', '--frame_cnt'],
      ['frame_skip_ref', '--frame_skip_ref'],
      ['frame_skip_dist', '--frame_skip_dist'],
      ['subsample', '--subsample'],
    ];
    for (const [key, flag] of numbers) if (title[key] !== undefined) argv.push(flag, String(title[key]));
    if (title.no_prediction) argv.push('--no_prediction');
    if (title.scale === true) argv.push('--scale');
    if (title.scale === false) argv.push('--no-scale');
  }
  if (!argv.includes('--queue')) argv.push('--queue', queue);
  const own = title.segment ?? segment;
  if (own !== undefined && !argv.includes('--segment')) argv.push('--segment', String(own));
  return argv;
}
