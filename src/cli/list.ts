/**
 * `vmaf-stream --list`: the built-in models and every feature extractor with its options,
 * from the registry, so nobody has to read libvmaf's sources to know what `--feature` takes.
 */
import { EXTRACTORS } from '../extractors/registry.js';
import { formatG, type OptionDef } from '../extractors/option.js';
import { BUILTIN_MODELS } from '../pipeline/model/index.js';

function optionLine(opt: OptionDef): string {
  const value = opt.type === 'double' ? formatG(opt.default) : String(opt.default);
  const range = opt.type === 'int' || opt.type === 'double' ? ` [${formatG(opt.min)}, ${opt.max >= Number.MAX_VALUE ? 'inf' : formatG(opt.max)}]` : '';
  const alias = opt.param ? ` (in feature names: ${opt.alias ?? opt.name})` : '';
  return `    ${opt.name}=${value}  ${opt.type}${range}${alias}: ${opt.help}`;
}

export function listText(): string {
  const lines = ['Built-in models (-m version=NAME):', ...BUILTIN_MODELS.map((m) => `  ${m}`), '', 'Feature extractors (--feature NAME[=OPTION=VALUE:...]):'];
  for (const x of EXTRACTORS) {
    lines.push(`  ${x.name}: ${x.summary}`);
    for (const opt of x.options) if (opt.name !== 'debug') lines.push(optionLine(opt));
  }
  return lines.join('\n');
}
