// The machine's CPU, for the reports.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** The CPU's model name: /proc/cpuinfo's on Linux, else what os.cpus() says. */
export function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}
