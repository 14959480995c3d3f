// Runs one measurement in a child process: wall time from spawn to exit, and, sampled from
// /proc every few milliseconds (Linux), the memory and CPU time of the child and every
// process under it (ffmpeg decoders spawned by our library, for one).
//
//   peakTreeRssKiB  the largest sum of VmRSS over the process tree seen at one sample
//   maxRssKiB       the largest single-process peak (VmHWM, the kernel's own high-water mark,
//                   so it needs no lucky sample; only growth in the last sample period of a
//                   process's life can be missed). Children that report their own
//                   process.resourceUsage().maxRSS can raise it with `selfMaxRssKiB`.
//   cpuS            user + system CPU seconds, summed over the tree (each process's last
//                   sample; at most one sample period per process is missed)
//   otherCores      the machine's other busy CPU time over the run, in cores (/proc/stat, less
//                   cpuS): other processes competing for the cores, which make timings unfair
// Elsewhere than Linux only wallS is measured.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

const USER_HZ = 100; // /proc's clock ticks: USER_HZ is 100 on every Linux architecture
const hasProc = process.platform === 'linux' && (() => {
  try {
    readFileSync('/proc/self/status');
    return true;
  } catch {
    return false;
  }
})();

/** CPU seconds the whole machine has been busy (all CPUs; steal included) since boot. */
function machineBusyS() {
  if (!hasProc) return null;
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal ...
    return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0)) / USER_HZ;
  } catch {
    return null;
  }
}

function childrenOf(pid) {
  const out = [];
  let tasks;
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
    } catch {
      // the task ended
    }
  }
  return out;
}

function readProc(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const kib = (key) => {
      const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) : 0;
    };
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 (state)
    const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?';
    return { name, rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM'), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined; // gone, or a zombie without status
  }
}

/**
 * Runs `command args` and measures it. Resolves with
 * { code, signal, wallS, rootMaxRssKiB, stdout, stderr, peakTreeRssKiB, maxRssKiB, cpuS, otherCores, processes }.
 */
export function measure(command, args, { env = process.env, cwd, sampleMs = 20, onStderr } = {}) {
  return new Promise((resolve, reject) => {
    const seen = new Map(); // pid -> { name, hwmKiB, cpuTicks }
    let peakTreeRssKiB = 0;
    const busyBefore = machineBusyS();
    const started = performance.now();
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout = [];
    const stderr = [];
    child.stdout.on('data', (b) => stdout.push(b));
    child.stderr.on('data', (b) => {
      stderr.push(b);
      onStderr?.(b);
    });

    const sample = () => {
      if (!hasProc || child.pid === undefined) return;
      let tree = 0;
      const stack = [child.pid];
      while (stack.length) {
        const pid = stack.pop();
        const p = readProc(pid);
        if (p) {
          tree += p.rssKiB;
          const prev = seen.get(pid);
          seen.set(pid, {
            name: p.name,
            hwmKiB: Math.max(prev?.hwmKiB ?? 0, p.hwmKiB),
            cpuTicks: Math.max(prev?.cpuTicks ?? 0, p.cpuTicks),
          });
        }
        stack.push(...childrenOf(pid));
      }
      peakTreeRssKiB = Math.max(peakTreeRssKiB, tree);
    };
    const timer = setInterval(sample, sampleMs);
    sample();

    child.on('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      const wallS = (performance.now() - started) / 1000;
      const busyAfter = machineBusyS();
      clearInterval(timer);
      const done = () => {
        const processes = [...seen].map(([pid, p]) => ({ pid, name: p.name, hwmKiB: p.hwmKiB, cpuS: p.cpuTicks / USER_HZ }));
        const cpuS = hasProc ? processes.reduce((s, p) => s + p.cpuS, 0) : null;
        // What else kept the machine busy meanwhile (other processes, this bench's own sampling).
        const otherCores = busyBefore == null || busyAfter == null ? null : Math.max(0, busyAfter - busyBefore - cpuS) / wallS;
        resolve({
          code,
          signal,
          wallS,
          rootMaxRssKiB: hasProc ? (seen.get(child.pid)?.hwmKiB ?? null) : null,
          stdout: Buffer.concat(stdout).toString('utf8'),
          stderr: Buffer.concat(stderr).toString('utf8'),
          peakTreeRssKiB: hasProc ? peakTreeRssKiB : null,
          maxRssKiB: hasProc ? Math.max(0, ...processes.map((p) => p.hwmKiB)) : null,
          cpuS,
          otherCores,
          processes,
        });
      };
      // stdout/stderr may still hold data after 'exit'
      if (child.stdout.readableEnded && child.stderr.readableEnded) done();
      else child.on('close', done);
    });
  });
}
