#!/usr/bin/env python3
"""What linerate's host samplers cost: `linerate sys` at 1 s beside `vmstat 1` (procps), both
for the same seconds, in one run. Prints each one's CPU time (user + system, from wait4) as a
share of one core, and the ratio linerate/vmstat. The target: under 0.5 % of one core.

    python3 bench/sampler_overhead.py [--seconds 60] [--interval 1]

Runs in a session of its own (setsid) with a raised autogroup priority. linerate samples
everything a test records (per-CPU split, /proc/interrupts, softirqs, interfaces, snmp,
softnet, memory, own rusage) and writes a JSON document per interval to /dev/null.
"""
import argparse
import os
import subprocess
import sys

import benchlib

ROOT = benchlib.ROOT
LINERATE = benchlib.LINERATE


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--interval", type=int, default=1, help="whole seconds (vmstat takes no fractions)")
    a = p.parse_args()
    benchlib.own_session()
    if not os.path.exists(LINERATE):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    n = a.seconds // a.interval
    null = open(os.devnull, "w")
    procs = {
        "linerate sys --json": subprocess.Popen(
            [LINERATE, "sys", "--json", "-i", str(a.interval), "-n", str(n)], stdout=null
        ),
        "vmstat": subprocess.Popen(["vmstat", "-n", str(a.interval), str(n + 1)], stdout=null),
    }
    cost = {}
    for name, proc in procs.items():
        _, status, ru = os.wait4(proc.pid, 0)
        if status != 0:
            sys.exit(f"{name} exited with status {status}")
        cpu = ru.ru_utime + ru.ru_stime
        cost[name] = 100.0 * cpu / a.seconds
        print(f"{name:22} {cpu:.3f} CPU s over {a.seconds} s = {cost[name]:.3f} % of one core", flush=True)
    lr, vm = cost["linerate sys --json"], cost["vmstat"]
    print(f"ratio linerate/vmstat: {lr / vm:.2f}" if vm > 0 else "vmstat used no measurable CPU")
    print("target: linerate under 0.5 % of one core:", "met" if lr < 0.5 else "NOT met")


if __name__ == "__main__":
    main()
