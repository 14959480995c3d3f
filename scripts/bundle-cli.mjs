// Bundles the command line (dist/cli/main.js and the modules it imports, statically or on
// demand) into dist/cli-bundle/, and the gpu thread's module into dist/cli-bundle/worker/: a run's start-up then reads a few files instead of about two
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

/** Rewrites each module's import.meta.url to its dist/ file's URL, relative to the bundle's folder `dir`. */
const ownUrls = (dir) => ({
  name: 'own-module-urls',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      let text = await readFile(args.path, 'utf8');
      if (text.includes('import.meta.url')) {
        const own = JSON.stringify(relative(dir, args.path).split('\\').join('/'));
        text = text.replaceAll('import.meta.url', `new URL(${own}, import.meta.url).href`);
      }
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
});

/** One esbuild pass: `entryPoints` into `dir`, dynamic imports as chunks of their own. */
const bundle = (entryPoints, dir, define = {}, splitting = true) =>
  build({
    entryPoints,
    define,
    bundle: true,
    splitting,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: dir,
    packages: 'external',
    plugins: [ownUrls(dir)],
    metafile: true,
    logLevel: 'warning',
  });

await rm(out, { recursive: true, force: true });
// The gpu thread's module is bundled apart, into cli-bundle/worker/: a worker thread loads its
// modules afresh, sharing no module instance with the main thread, so chunks shared with the
// command line would only make it load more files (about 28, each resolved, read and linked
// on the way to the GPU device); apart, what it loads at start is one file.
const workerDir = join(out, 'worker');
const worker = await bundle({ 'gpu-thread-worker': join(dist, 'kernels', 'gpu-thread', 'gpu-thread-worker.js') }, workerDir, {}, false);
// The command line, and the early start of the gpu thread, which bin/vmaf-stream loads before
// everything else. prestart.ts starts the bundled worker where this is defined (its
// import.meta.url is dist's, see above).
const main = await bundle(
  { main: join(dist, 'cli', 'main.js'), 'early-gpu-thread': join(dist, 'cli', 'early-gpu-thread.js') },
  out,
  { VMAF_STREAM_BUNDLED_WORKER: JSON.stringify(relative(join(dist, 'kernels', 'gpu-thread'), join(workerDir, 'gpu-thread-worker.js')).split('\\').join('/')) },
);
const modules = {};
for (const result of [main, worker]) {
  for (const [file, output] of Object.entries(result.metafile.outputs)) {
    if (!file.endsWith('.js')) continue;
    modules[relative(out, join(root, file)).split('\\').join('/')] = Object.keys(output.inputs).map((input) => relative(dist, join(root, input)).split('\\').join('/'));
  }
}
await writeFile(join(out, 'modules.json'), `${JSON.stringify(modules, null, 1)}\n`);
