#!/usr/bin/env python3
"""How a fleet controller's cost grows with the fleet (issue 24): a mesh of N lab hosts with
short tests, for N in --hosts, timed and measured on the controller.

For each N a lab of N + 1 hosts is made (`linerate lab up --hosts N+1 --link rate=1gbit`); h1 is
the controller and h2 .. h(N+1) the mesh, so the mesh has N(N − 1) cells in 2(N − 1) rounds (N
even) or 2N (N odd). The controller runs `linerate tcp --pattern mesh ... -t SECONDS --json
--no-store` inside h1; the script waits for it with wait4(2) and reports its wall time, the time
the tests themselves take (rounds × SECONDS), the overhead per round (clock readings, the
agreed start's margin, handshakes, results), the controller's CPU time and its peak resident
memory (ru_maxrss of the process tree under `lab exec`), and the matrix's largest start skew.
No peer tool runs a mesh, so there is no ratio to another tool: the figures are the scaling of
cost with host count, and the ratio of wall time to planned test time.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

LAB = "fbench"


def run(args, timeout=600):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def mesh(n, seconds):
    hosts = [f"h{i}" for i in range(2, n + 2)]
    t0 = time.monotonic()
    up = run([benchlib.LINERATE, "lab", "up", "--name", LAB, "--hosts", str(n + 1), "--link", "rate=1gbit"])
    up_s = time.monotonic() - t0
    if up.returncode != 0:
        raise SystemExit(f"lab up --hosts {n + 1}: {up.stderr.strip()}")
    try:
        # The controller runs under this script's --measure inside h1, which waits for it with
        # wait4(2) and prints its own use: lab exec's and ip's processes stay out of the figures.
        cmd = [benchlib.LINERATE, "lab", "exec", "--name", LAB, "h1", "--",
               sys.executable, os.path.abspath(__file__), "--measure", "--",
               benchlib.LINERATE, "tcp", "--pattern", "mesh", *hosts, "-t", str(seconds), "-i", "0",
               "--json", "--no-store"]
        p = run(cmd, timeout=3600)
        if p.returncode not in (0, 3):
            raise SystemExit(f"mesh of {n}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        usage = json.loads(p.stderr.strip().splitlines()[-1].removeprefix("RUSAGE "))
        m = json.loads(p.stdout)
    finally:
        t0 = time.monotonic()
        run([benchlib.LINERATE, "lab", "down", "--name", LAB])
        down_s = time.monotonic() - t0
    rounds = len(m["rounds"])
    skews = [r["start_skew_ns"] for r in m["rounds"] if r.get("start_skew_ns") is not None]
    return {
        "hosts": n,
        "cells": len(m["cells"]),
        "failed": len(m["failed"]),
        "rounds": rounds,
        "wall_s": usage["wall_s"],
        "tests_s": rounds * seconds,
        "overhead_per_round_s": (usage["wall_s"] - rounds * seconds) / rounds,
        "cpu_s": usage["cpu_s"],
        "maxrss_mib": usage["maxrss_kib"] / 1024,
        "max_skew_ms": max(skews) / 1e6 if skews else None,
        "lab_up_s": up_s,
        "lab_down_s": down_s,
    }


def measure(cmd):
    """Runs `cmd`, passes its output on, and prints its wall time, CPU time and peak RSS as the
    last line of stderr (`RUSAGE {json}`)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = {"out": [], "err": []}
    readers = [threading.Thread(target=lambda s=s, k=k: chunks[k].append(s.read()))
               for s, k in ((p.stdout, "out"), (p.stderr, "err"))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    for r in readers:
        r.join()
    sys.stdout.buffer.write(b"".join(chunks["out"]))
    sys.stderr.buffer.write(b"".join(chunks["err"]))
    sys.stderr.write("RUSAGE " + json.dumps({
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss_kib": usage.ru_maxrss,
    }) + "\n")
    sys.exit(os.waitstatus_to_exitcode(status))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="4,8,12,16", help="mesh sizes, comma-separated")
    ap.add_argument("--seconds", type=float, default=0.5, help="length of each cell's test")
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        measure(args.command)
    benchlib.own_session()
    benchlib.build_release()
    rows = []
    for n in [int(x) for x in args.hosts.split(",")]:
        row = mesh(n, args.seconds)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print("| hosts | cells | rounds | failed | wall (s) | tests (s) | overhead per round (s) "
          "| controller CPU (s) | controller peak RSS (MiB) | largest start skew (ms) | lab up (s) | lab down (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        skew = "n/a" if r["max_skew_ms"] is None else f"{r['max_skew_ms']:.2f}"
        print(f"| {r['hosts']} | {r['cells']} | {r['rounds']} | {r['failed']} | {r['wall_s']:.1f} | "
              f"{r['tests_s']:.1f} | {r['overhead_per_round_s']:.2f} | {r['cpu_s']:.2f} | "
              f"{r['maxrss_mib']:.1f} | {skew} | {r['lab_up_s']:.1f} | {r['lab_down_s']:.1f} |")


if __name__ == "__main__":
    main()
