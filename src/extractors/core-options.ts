/**
 * The fused core computes VIF and ADM at the default options and an enhancement gain limit
 * of 1 (the NEG models'). Other option values are refused with a clear message rather than
 * computed wrong. (Motion takes every option: see integer_motion/motion-options.ts.)
 */
import { UsageError } from '../errors.js';
import { formatG, type OptionDef, type OptionValues } from './option.js';

export function assertCoreOptions(extractor: string, table: readonly OptionDef[], values: OptionValues, gainLimits: readonly string[]): void {
  for (const opt of table) {
    const value = values[opt.name];
    if (value === undefined || value === opt.default || opt.name === 'debug') continue;
    if (gainLimits.includes(opt.name) && value === 1) continue;
    const text = typeof value === 'number' ? formatG(value) : String(value);
    throw new UsageError(`${extractor}: option ${opt.name}=${text} is not supported by vmaf-stream yet (supported: the defaults${gainLimits.length ? `, ${gainLimits.join(', ')}=1` : ''})`);
  }
}

/** Whether the fused core computes these option values (the defaults, and the listed gain limits at 1). */
export function coreTakesOptions(table: readonly OptionDef[], values: OptionValues, gainLimits: readonly string[]): boolean {
  try {
    assertCoreOptions('', table, values, gainLimits);
    return true;
  } catch {
    return false;
  }
}
