#!/usr/bin/env python3
"""linerate udp beside iperf3 -u -b 0: the most datagrams a receiver takes, 64 and 1472 bytes,
on loopback and across a lab veth link, interleaved rounds.

Prints each run and the median ratios linerate/iperf3 of received datagrams per second and of
received payload Gbit/s. Both tools send as fast as they can from one stream for the same time;
received = datagrams the receiver counted (linerate summary.datagrams_received, iperf3 packets
minus lost_packets) over the run's seconds. Run as root on a quiet machine:

    python3 bench/udp_vs_iperf3.py [--seconds 5] [--rounds 3] [--before PATH]

With --before PATH (another linerate binary) every round runs iperf3, this build, then PATH, and
a last table gives each build's ratio to iperf3 and the after/before ratio of the medians.

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs
iperf3 (Debian) when missing; the lab case makes a lab named `ubench` and removes it (each
tool runs its own server in h2). Sends
traffic to 127.0.0.1 and inside the lab only.
"""
import functools
import os
import statistics
import subprocess
import time

import benchlib

LINERATE = benchlib.LINERATE
LAB = "ubench"


def ns(where, host):
    """The command prefix that runs in a lab host, or nothing on loopback."""
    return [] if where == "loopback" else ["ip", "netns", "exec", f"{LAB}-{host}"]


def target(where):
    return "127.0.0.1" if where == "loopback" else "10.211.0.2"


def linerate(binary, where, size, seconds, port):
    # In the lab too each build runs its own agent in h2 (not the lab's), so that both ends are
    # the build measured; the lab's namespaces are private, so that agent asks for no secret.
    auth = [] if where == "loopback" else ["--no-auth"]
    srv = benchlib.start_server(ns(where, "h2") + [binary, "serve", "--bind", target(where), "--port", str(port)] + auth,
                                port)
    try:
        doc, cpu = benchlib.run_json_cpu(ns(where, "h1") + [binary, "udp", f"{target(where)}:{port}", "-l", str(size),
                                                            "-t", str(seconds), "-i", "0", "--json"], seconds + 60)
    finally:
        cpu_server = benchlib.stop_server(srv)
    s = doc["summary"]
    secs = s["received"]["seconds"]
    got = s["datagrams_received"]
    return got / secs, got * size * 8 / secs, (cpu + cpu_server) * 1e9 / max(got, 1)


def iperf3(where, size, seconds, port):
    srv = benchlib.start_server(ns(where, "h2") + ["iperf3", "-s", "-1", "-p", str(port)], port)
    try:
        doc, cpu = benchlib.run_json_cpu(ns(where, "h1") + ["iperf3", "-c", target(where), "-p", str(port), "-u",
                                                            "-b", "0", "-l", str(size), "-t", str(seconds), "-J"],
                                         seconds + 60)
    finally:
        cpu_server = benchlib.stop_server(srv)
    e = doc["end"]["sum"]
    got = e["packets"] - e["lost_packets"]
    return got / e["seconds"], got * size * 8 / e["seconds"], (cpu + cpu_server) * 1e9 / max(got, 1)


PEER = "iperf3"
NEEDS = (["iperf3"], ["iperf3"])  # commands, and the Debian packages that bring them
DEFAULT_SECONDS = 5
CASES = [(where, size) for where in ("loopback", "lab veth") for size in (64, 1472)]


def runs_per_round(args):
    return len(CASES) * (2 + bool(args.before))


def setup(args):
    """Makes the lab (removed by teardown)."""
    subprocess.run([LINERATE, "lab", "down", "--name", LAB], capture_output=True)
    subprocess.run([LINERATE, "lab", "up", "--name", LAB, "--hosts", "2"], check=True, capture_output=True)
    return {"port": 5460}


def teardown(ctx):
    subprocess.run([LINERATE, "lab", "down", "--name", LAB], capture_output=True)


def run_round(args, rnd, ctx, log=print):
    """One round: each place and size, iperf3 and linerate (and --before's build). Returns rows
    ((where, size), tool, (received datagrams/s, received bits/s, CPU ns per received datagram))."""
    rows = []
    for where, size in CASES:
        runs = [(name, functools.partial(linerate, binary)) for name, binary in benchlib.binaries(args)]
        for name, fn in benchlib.round_order(args, rnd, runs[:1] + [("iperf3", iperf3)] + runs[1:]):
            ctx["port"] += 1
            pps, bps, cpu_ns = fn(where, size, args.seconds, ctx["port"])
            rows.append(((where, size), name, (pps, bps, cpu_ns)))
            log(f"{rnd:>5} {where:<9} {size:>5} {name:<9} {pps:>15,.0f} {bps / 1e9:>10.3f} {cpu_ns:>12,.0f}",
                flush=True)
            time.sleep(1)
    return rows


def pairs(rows):
    """One round's rows as linerate/iperf3 pairs: received datagrams/s, CPU (both ends) per
    received datagram."""
    got = {(k, tool): v for k, tool, v in rows}
    return [benchlib.Pair(f"{where} {size} B", "datagrams/s", got[((where, size), "linerate")][0],
                          got[((where, size), "iperf3")][0], "CPU ns/datagram",
                          got[((where, size), "linerate")][2], got[((where, size), "iperf3")][2])
            for where, size in CASES]


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    ctx = setup(args)
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {version}; {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    print(f"{'round':>5} {'where':<9} {'bytes':>5} {'tool':<9} {'rx datagrams/s':>15} {'rx Gbit/s':>10} "
          f"{'CPU ns/dgram':>12}")
    results = {}
    try:
        for (where, size), name, values in benchlib.rounds(args, run_round, ctx):
            results.setdefault((where, size, name), []).append(values[:2])
    finally:
        teardown(ctx)
    print()
    print(f"{'where':<9} {'bytes':>5} {'linerate dgram/s':>17} {'iperf3':>12} {'ratio':>6}   {'linerate Gbit/s':>15} {'iperf3':>7} {'ratio':>6}")
    for where in ("loopback", "lab veth"):
        for size in (64, 1472):
            lr, ip = results[(where, size, "linerate")], results[(where, size, "iperf3")]
            lp, ipp = statistics.median(x[0] for x in lr), statistics.median(x[0] for x in ip)
            lb, ib = statistics.median(x[1] for x in lr), statistics.median(x[1] for x in ip)
            print(f"{where:<9} {size:>5} {lp:>17,.0f} {ipp:>12,.0f} {lp / ipp:>6.2f}   {lb / 1e9:>15.3f} {ib / 1e9:>7.3f} {lb / ib:>6.2f}")
    print("# medians of received figures; targets: 64 B datagrams/s >= 3x, 1472 B Gbit/s >= 1.5x iperf3")
    if args.before:
        cases = [(f"{where} {size} B", lambda tool, w=where, s=size: (w, s, tool))
                 for where in ("loopback", "lab veth") for size in (64, 1472)]
        benchlib.print_before("iperf3", results, cases, [("rx datagrams/s", 0, 1), ("rx Gbit/s", 1, 1e9)])


if __name__ == "__main__":
    main()
