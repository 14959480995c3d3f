// mocha's options for `npm test`. Test files run in parallel worker processes: most of a file's
// time is a child process (the CLI, ffmpeg, Redis, Chromium) or lavapipe's compilation and
// dispatches, and a file that waits (timeouts, stalls, signals) leaves the cores to another
// (on CI's 2 cores: 12 minutes against 27 one file at a time). `npx mocha --no-parallel` runs
// them one at a time.
const { availableParallelism } = require('node:os');

module.exports = {
  spec: ['test/**/*.test.mjs'],
  timeout: 600000,
  reporter: './test/reporter.cjs',
  parallel: true,
  // At least 2 where the machine has 2 cores (its default would be 1); at most 4 (each file may
  // run a gpu backend on lavapipe, which takes every core, and a few hundred MiB).
  jobs: Math.min(4, Math.max(2, availableParallelism() - 1)),
};
