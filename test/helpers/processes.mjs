// Processes seen through /proc, for tests that check which children a run leaves behind.
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of /proc/PID/stat after the command name (state first), or undefined. */
export function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The processes whose parent is `pid`. */
export function childrenOf(pid) {
  const children = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(Number(entry));
    if (fields && Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}

/** Whether a process still runs (a zombie has ended: only its exit status is left). */
export function running(pid) {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z' && state !== 'X';
}

export function commandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}
