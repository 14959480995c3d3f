// Mocha's spec reporter plus the plain closing line "N passed, N failed" that CI reads.
const Mocha = require('mocha');

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      const { passes, failures, pending } = runner.stats;
      process.stdout.write(`${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}\n`);
    });
  }
}
module.exports = SpecWithTotals;
