// The addon's C++ sources for binding.gyp: the cpu backend's core (src/kernels/cpu) and
// each registered extractor's implementation (src/extractors/<name>/*.cpp).
const { readdirSync, existsSync } = require('node:fs');
const { join } = require('node:path');

const cpp = (dir) => readdirSync(dir).filter((f) => f.endsWith('.cpp')).sort().map((f) => join(dir, f));
const extractors = readdirSync('src/extractors', { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => join('src/extractors', d.name))
  .sort();
const sources = [...cpp('src/kernels/cpu'), ...extractors.filter(existsSync).flatMap(cpp)];
process.stdout.write(sources.join(' '));
