// Mocha's spec reporter plus the plain closing line "N passed, N failed" that CI reads.
// VMAF_TEST_TIMES=FILE (with --no-parallel: in parallel a file's events come replayed, without its
// name) also writes each test file's wall time (its hooks included), slowest
// first, so the suite's time can be found where it goes.
const fs = require('node:fs');
const Mocha = require('mocha');

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const timesPath = process.env.VMAF_TEST_TIMES;
    const started = new Map();
    const elapsed = new Map();
    if (timesPath) {
      runner.on('suite', (suite) => { if (suite.file && suite.parent?.root) started.set(suite, process.hrtime.bigint()); });
      runner.on('suite end', (suite) => {
        const t0 = started.get(suite);
        if (t0 === undefined) return;
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        elapsed.set(suite.file, (elapsed.get(suite.file) ?? 0) + s);
      });
    }
    runner.once('end', () => {
      const { passes, failures, pending } = runner.stats;
      process.stdout.write(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}\n`);
      if (timesPath) {
        const rows = [...elapsed].sort((a, b) => b[1] - a[1]).map(([file, s]) => `${s.toFixed(1).padStart(8)} s  ${file}`);
        fs.writeFileSync(timesPath, rows.join('\n') + '\n');
      }
    });
  }
}
module.exports = SpecWithTotals;
