// Copies non-TypeScript assets (WGSL kernels, built-in model files) from src/ into dist/,
// keeping their relative paths, so dist/ is self-contained.
import { cpSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, extname } from 'node:path';

const ASSETS = new Set(['.wgsl', '.json']);
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (ASSETS.has(extname(name))) {
      const target = join('dist', path.slice('src/'.length));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
walk('src');
