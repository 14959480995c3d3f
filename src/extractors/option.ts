/**
 * Extractor options as libvmaf declares and parses them (its opt.h / opt.c): a typed table
 * per extractor with defaults and ranges; values arrive as text (`--feature
 * psnr=enable_chroma=false`, a model's feature_opts_dicts, `-m ...:adm.adm_enhn_gain_limit=1`)
 * and are parsed the way libvmaf parses them, so the same text gives the same value and the
 * same option-suffixed feature name.
 */
import { UsageError } from '../errors.js';

interface OptionBase {
  /** libvmaf's option name, e.g. `adm_enhn_gain_limit`. */
  readonly name: string;
  /** The short name used in option-suffixed feature names (`egl`); the name where absent. */
  readonly alias?: string;
  /** Whether a non-default value becomes part of the feature names (VMAF_OPT_FLAG_FEATURE_PARAM). */
  readonly param: boolean;
  readonly help: string;
}

export type OptionDef =
  | (OptionBase & { readonly type: 'bool'; readonly default: boolean })
  | (OptionBase & { readonly type: 'int'; readonly default: number; readonly min: number; readonly max: number })
  | (OptionBase & { readonly type: 'double'; readonly default: number; readonly min: number; readonly max: number })
  | (OptionBase & { readonly type: 'string'; readonly default: string });

export type OptionValue = boolean | number | string;

/** Every option of an extractor, defaults filled in. */
export type OptionValues = Readonly<Record<string, OptionValue>>;

// ---- C number text -------------------------------------------------------------------

/** printf("%g", x): six significant digits, trailing zeros dropped. */
export function formatG(x: number): string {
  if (Number.isNaN(x)) return x < 0 ? '-nan' : 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const exp = x.toExponential(5); // d.ddddde±X, rounded to 6 significant digits
  const m = /^(-?)(\d)\.(\d{5})e([+-]\d+)$/.exec(exp)!;
  const e = Number(m[4]);
  const sign = m[1]!;
  const digits = (m[2]! + m[3]!).replace(/0+$/, '');
  if (e < -4 || e >= 6) {
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const ee = Math.abs(e) < 10 ? `0${Math.abs(e)}` : String(Math.abs(e));
    return `${sign}${mant}e${e < 0 ? '-' : '+'}${ee}`;
  }
  if (e >= 0) {
    const intPart = digits.slice(0, e + 1).padEnd(e + 1, '0');
    const frac = digits.slice(e + 1);
    return `${sign}${intPart}${frac ? '.' + frac : ''}`;
  }
  return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
}

const NUMBER_PREFIX = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/;

/** C's strtod-prefix parse: the longest leading decimal number, or NaN if none. */
function parseNumberPrefix(text: string): { value: number; length: number } {
  const m = NUMBER_PREFIX.exec(text);
  if (!m) return { value: NaN, length: 0 };
  return { value: Number(m[0].trim()), length: m[0].length };
}

/**
 * libvmaf stores a numeric option value as text normalised through a C float: strtof,
 * then "%g" (its feature dictionaries). Non-numeric text is kept as it is.
 */
export function normaliseNumericText(text: string): string {
  const { value, length } = parseNumberPrefix(text);
  if (length === 0) return text;
  return formatG(Math.fround(value));
}

/** A value from a model file's feature_opts_dicts, as the text libvmaf keeps for it. */
export function optionTextFromJson(value: unknown): string | undefined {
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return normaliseNumericText(String(value));
  if (typeof value === 'string') return value;
  return undefined;
}

/** A value given on the command line (`--feature x=opt=1.0`, `-m ...:adm.opt=1.0`), as libvmaf keeps it. */
export function optionTextFromCli(text: string): string {
  return /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/.test(text) ? normaliseNumericText(text) : text;
}

/** C's atoi: leading integer, 0 when there is none. */
function atoi(text: string): number {
  const m = /^\s*([+-]?\d+)/.exec(text);
  if (!m) return 0;
  return Math.trunc(Number(m[1])) | 0;
}

/** C's atof: leading number, 0 when there is none. */
function atof(text: string): number {
  const { value, length } = parseNumberPrefix(text);
  return length === 0 ? 0 : value;
}

/** An option's value from its text, as libvmaf's option parser reads it; throws `fail(why)`. */
export function parseOptionText(opt: OptionDef, text: string, fail: (why: string) => Error): OptionValue {
  switch (opt.type) {
    case 'bool':
      if (text !== 'true' && text !== 'false') throw fail('is not true or false');
      return text === 'true';
    case 'int': {
      const n = atoi(text);
      if (n === 0 && text.trim()[0] !== '0') throw fail('is not an integer');
      if (n < opt.min || n > opt.max) throw fail(`is out of range [${opt.min}, ${opt.max}]`);
      return n;
    }
    case 'double': {
      const n = atof(text);
      if (n === 0 && !/^\s*[+-]?\.?0/.test(text)) throw fail('is not a number');
      if (n < opt.min || n > opt.max) throw fail(`is out of range [${formatG(opt.min)}, ${formatG(opt.max)}]`);
      return n;
    }
    case 'string':
      return text;
  }
}

/**
 * Every option's value: the defaults, with `given` (option name → text) parsed over them.
 * An unknown option name is a UsageError naming the extractor and its options.
 */
export function resolveOptions(extractor: string, table: readonly OptionDef[], given: ReadonlyMap<string, string>, where: string): OptionValues {
  const values: Record<string, OptionValue> = {};
  for (const opt of table) values[opt.name] = opt.default;
  for (const [name, text] of given) {
    const opt = table.find((o) => o.name === name);
    if (!opt) {
      const known = table.map((o) => o.name).join(', ') || 'none';
      throw new UsageError(`${where}: ${extractor} has no option "${name}" (its options: ${known})`);
    }
    values[name] = parseOptionText(opt, text, (why) => new UsageError(`${where}: ${extractor} option ${name}=${text} ${why}`));
  }
  return values;
}

/** The value as libvmaf prints it in a feature name: %d, %g, the string, or nothing for a bool. */
export function optionValueText(opt: OptionDef, value: OptionValue): string {
  switch (opt.type) {
    case 'bool':
      return value ? 'true' : 'false';
    case 'int':
      return String(value);
    case 'double':
      return formatG(value as number);
    case 'string':
      return String(value);
  }
}
