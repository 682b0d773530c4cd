#!/usr/bin/env python3
"""linerate rr beside sockperf ping-pong: closed-loop round trips per second and their p50 / p99,
TCP and UDP, on loopback, interleaved rounds.

Both tools run one closed loop (the next request when the answer is in) for the same time, with
14-byte messages each way (sockperf's smallest; linerate also at 1 byte for the record). sockperf
prints half round trips ("latency"): its percentiles are doubled here to give round trips.
Two placements: the OS's choice (ends on different CPUs: the round trip includes the cross-CPU
wake-ups) and both ends pinned to CPU 1 (taskset for sockperf, --cpus/--peer-cpus for linerate).
Run as root on a quiet machine:

    python3 bench/rr_vs_sockperf.py [--seconds 5] [--rounds 3] [--before PATH]

With --before PATH (another linerate binary) every round runs sockperf, this build (14 and 1
byte), then PATH, and a last table gives each build's ratio to sockperf (the 1-byte rows too,
against sockperf at 14 bytes) and the after/before ratio of the medians.

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs
sockperf (Debian) when missing. Sends traffic to 127.0.0.1 only. (netperf, the issue's other
peer, is not packaged by Debian and its source is not reachable from here.)
"""
import functools
import os
import re
import statistics
import subprocess
import time

import benchlib



def linerate(binary, proto, size, seconds, port, pinned):
    srv = benchlib.start_server([binary, "serve", "--bind", "127.0.0.1", "--port", str(port)], port)
    cmd = [binary, "rr", f"127.0.0.1:{port}", "--proto", proto, "--request", str(size),
           "--response", str(size), "-t", str(seconds), "-i", "0", "--json"]
    if pinned:
        cmd += ["--cpus", "1", "--peer-cpus", "1"]
    try:
        doc, cpu = benchlib.run_json_cpu(cmd, seconds + 60)
    finally:
        cpu_server = benchlib.stop_server(srv)
    s = doc["summary"]
    return (s["transactions_per_second"], s["latency_us"]["p50"], s["latency_us"]["p99"],
            (cpu + cpu_server) * 1e6 / max(s["transactions"], 1))


def sockperf(proto, size, seconds, port, pinned):
    pin = ["taskset", "-c", "1"] if pinned else []
    tcp = ["--tcp"] if proto == "tcp" else []
    srv = subprocess.Popen(pin + ["sockperf", "server", "-i", "127.0.0.1", "-p", str(port)] + tcp,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    cmd = pin + ["sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(port), "-m", str(size),
                 "-t", str(seconds)] + tcp
    before = benchlib.children_cpu_seconds()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    finally:
        cpu_server = benchlib.stop_server(srv)
    cpu = benchlib.children_cpu_seconds() - before
    text = out.stdout + out.stderr
    m = re.search(r"RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
    if not m:
        raise SystemExit(f"{' '.join(cmd)}: no summary in its output:\n{text}")
    rate = int(m.group(3)) / float(m.group(1))

    def pct(p):
        return 2 * float(re.search(rf"percentile {p} =\s+([\d.]+)", text).group(1))

    return rate, pct("50.000"), pct("99.000"), (cpu + cpu_server) * 1e6 / max(int(m.group(3)), 1)


PEER = "sockperf"
NEEDS = (["sockperf"], ["sockperf"])  # commands, and the Debian packages that bring them
DEFAULT_SECONDS = 5
CASES = [(proto, pinned) for pinned in (False, True) for proto in ("tcp", "udp")]


def runs_per_round(args):
    return len(CASES) * (1 + 2 * (1 + bool(args.before)))


def setup(args):
    return {"port": 5560}


def teardown(ctx):
    pass


def run_round(args, rnd, ctx, log=print):
    """One round: each protocol and placement, sockperf and linerate at 14 and 1 bytes (and
    --before's build). Returns rows ((proto, placement, size), tool, (round trips/s, p50 us,
    p99 us, CPU us per round trip))."""
    rows = []
    for proto, pinned in CASES:
        runs = [(name, functools.partial(linerate, binary), size)
                for name, binary in benchlib.binaries(args) for size in (14, 1)]
        for name, fn, size in benchlib.round_order(args, rnd, runs[:1] + [("sockperf", sockperf, 14)] + runs[1:]):
            ctx["port"] += 1
            values = fn(proto, size, args.seconds, ctx["port"], pinned)
            place = "cpu 1" if pinned else "os"
            rows.append(((proto, place, size), name, values))
            rate, p50, p99, cpu_us = values
            log(f"{rnd:>5} {proto:<5} {place:<10} {size:>5} {name:<9} {rate:>14,.0f} {p50:>8.2f} {p99:>8.2f} "
                f"{cpu_us:>7.2f}", flush=True)
            time.sleep(0.5)
    return rows


def pairs(rows):
    """One round's rows as linerate/sockperf pairs at 14 bytes: round trips/s, CPU (both ends)
    per round trip."""
    got = {(k, tool): v for k, tool, v in rows}
    out = []
    for proto, pinned in CASES:
        place = "cpu 1" if pinned else "os"
        lr, sp = got[((proto, place, 14), "linerate")], got[((proto, place, 14), "sockperf")]
        out.append(benchlib.Pair(f"{proto} {place} 14 B", "round trips/s", lr[0], sp[0], "CPU us/round trip",
                                 lr[3], sp[3]))
    return out


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    version = subprocess.run(["sockperf", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"# {version.strip()}; {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    print(f"{'round':>5} {'proto':<5} {'placement':<10} {'bytes':>5} {'tool':<9} {'round trips/s':>14} {'p50 us':>8} "
          f"{'p99 us':>8} {'CPU us':>7}")
    cases = CASES
    results = {}
    ctx = setup(args)
    for (proto, place, size), name, values in benchlib.rounds(args, run_round, ctx):
        results.setdefault((proto, place, name, size), []).append(values[:3])
    print()
    print(f"{'proto':<5} {'placement':<10} {'linerate rt/s':>14} {'sockperf':>10} {'ratio':>6}   "
          f"{'p50 us lr/sp':>14}   {'p99 us lr/sp':>15}   {'linerate 1 B rt/s':>17}")
    for proto, pinned in cases:
        place = "cpu 1" if pinned else "os"
        lr, sp, one = (results[(proto, place, "linerate", 14)], results[(proto, place, "sockperf", 14)],
                       results[(proto, place, "linerate", 1)])
        med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
        print(f"{proto:<5} {place:<10} {med(lr, 0):>14,.0f} {med(sp, 0):>10,.0f} {med(lr, 0) / med(sp, 0):>6.3f}   "
              f"{med(lr, 1):>6.2f}/{med(sp, 1):<7.2f}   {med(lr, 2):>7.2f}/{med(sp, 2):<7.2f}   {med(one, 0):>17,.0f}")
    print("# medians; round trips = closed-loop transactions completed per second; target: >= 0.95x sockperf "
          "with the same or lower p50 and p99")
    if args.before:
        # The 1-byte runs of each build are set beside sockperf's 14 bytes (its smallest).
        rows = [(f"{proto} {place} {size} B", lambda tool, p=proto, pl=place, s=size: (p, pl, tool, 14 if tool == "sockperf" else s))
                for proto, pinned in cases for place in ["cpu 1" if pinned else "os"] for size in (14, 1)]
        benchlib.print_before("sockperf", results, rows, [("round trips/s", 0, 1), ("p50 us", 1, 1), ("p99 us", 2, 1)])


if __name__ == "__main__":
    main()
