// Bundles the command line (dist/cli/main.js and the modules it imports, statically or on
// demand) into dist/cli-bundle/: a run's start-up then reads a few files instead of about two
// hundred (each resolved, stat'ed, opened and read before it is compiled). Packages stay
// external. Dynamic imports become chunks of their own, so a run still loads only what it
// uses. Run after tsc and copy-assets (npm run build does).
//
// Each module's import.meta.url is rewritten to the URL its own file has in dist/, so that
// what it finds next to itself (WGSL, the built-in models, the addon, package.json) is found
// from the bundle as from dist/. dist/cli-bundle/modules.json lists the dist/ modules each
// chunk holds (tests map what a run loaded back to modules).
import { build } from 'esbuild';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const out = join(dist, 'cli-bundle');

const ownUrls = {
  name: 'own-module-urls',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      let text = await readFile(args.path, 'utf8');
      if (text.includes('import.meta.url')) {
        const own = JSON.stringify(relative(out, args.path).split('\\').join('/'));
        text = text.replaceAll('import.meta.url', `new URL(${own}, import.meta.url).href`);
      }
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

await rm(out, { recursive: true, force: true });
const result = await build({
  // The gpu thread's module too (kernels/gpu-thread): a worker thread loads its modules afresh.
  // And the early start of that thread, which bin/vmaf-stream loads before everything else.
  entryPoints: { main: join(dist, 'cli', 'main.js'), 'early-gpu-thread': join(dist, 'cli', 'early-gpu-thread.js'), 'gpu-thread-worker': join(dist, 'kernels', 'gpu-thread', 'gpu-thread-worker.js') },
  // gpu-thread-backend.ts starts the bundled worker where this is defined (its import.meta.url is dist's, see above).
  define: { VMAF_STREAM_BUNDLED_WORKER: JSON.stringify(relative(join(dist, 'kernels', 'gpu-thread'), join(out, 'gpu-thread-worker.js')).split('\\').join('/')) },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: out,
  packages: 'external',
  plugins: [ownUrls],
  metafile: true,
  logLevel: 'warning',
});
const modules = {};
for (const [file, output] of Object.entries(result.metafile.outputs)) {
  if (!file.endsWith('.js')) continue;
  modules[relative(out, join(root, file))] = Object.keys(output.inputs).map((input) => relative(dist, join(root, input)).split('\\').join('/'));
}
await writeFile(join(out, 'modules.json'), `${JSON.stringify(modules, null, 1)}\n`);
