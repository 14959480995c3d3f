#!/usr/bin/env python3
"""Times whole commands on a machine without farm-bench (the GPU machine): each run's wall
time and its children's user+sys CPU time (wait4), medians over --runs after --warmup, and,
with --vs, the B command alternated with A in the same loop and the paired ratio A/B.

  python3 bench/timer.py [-n 3] [--warmup 1] [--label NAME] [--vs 'CMD_B'] -- CMD_A ...
Prints one JSON line per command (label, runs, wall and cpu lists, medians, ratio)."""
import argparse, json, os, statistics, subprocess, sys, time

def run(cmd):
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(f"timer: exit {code}: {cmd}\n{err[-2000:]}\n")
    return wall, usage.ru_utime + usage.ru_stime, code, usage.ru_maxrss / 1024

def main():
    p = argparse.ArgumentParser()
    p.add_argument("-n", "--runs", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--label", default="")
    p.add_argument("--vs", default=None)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd_a = " ".join(a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd)
    cmds = [cmd_a] + ([a.vs] if a.vs else [])
    for _ in range(a.warmup):
        for c in cmds: run(c)
    res = [{"wall": [], "cpu": [], "rss": [], "fail": 0} for _ in cmds]
    for _ in range(a.runs):
        for r, c in zip(res, cmds):
            w, u, code, m = run(c)
            r["wall"].append(round(w, 4)); r["cpu"].append(round(u, 3)); r["rss"].append(round(m)); r["fail"] += code != 0
    for i, (r, c) in enumerate(zip(res, cmds)):
        out = {"label": a.label + ("" if i == 0 else " (vs)"), "cmd": c, "runs": a.runs,
               "wall_median": round(statistics.median(r["wall"]), 4),
               "cpu_median": round(statistics.median(r["cpu"]), 3), "peak_rss_mib": max(r["rss"]), "wall": r["wall"], "cpu": r["cpu"], "failed": r["fail"]}
        if i == 0 and a.vs:
            ratios = [x / y for x, y in zip(res[0]["wall"], res[1]["wall"])]
            out["paired_ratio_median"] = round(statistics.median(ratios), 4)
        print(json.dumps(out), flush=True)

if __name__ == "__main__":
    main()
