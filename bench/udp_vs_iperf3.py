#!/usr/bin/env python3
"""linerate udp beside iperf3 -u -b 0: the most datagrams a receiver takes, 64 and 1472 bytes,
on loopback and across a lab veth link, interleaved rounds.

Prints each run and the median ratios linerate/iperf3 of received datagrams per second and of
received payload Gbit/s. Both tools send as fast as they can from one stream for the same time;
received = datagrams the receiver counted (linerate summary.datagrams_received, iperf3 packets
minus lost_packets) over the run's seconds. Run as root on a quiet machine:

    python3 bench/udp_vs_iperf3.py [--seconds 5] [--rounds 3]

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs
iperf3 (Debian) when missing; the lab case makes a lab named `ubench` and removes it. Sends
traffic to 127.0.0.1 and inside the lab only.
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import benchlib

ROOT = benchlib.ROOT
LINERATE = benchlib.LINERATE
LAB = "ubench"


def ns(where, host):
    """The command prefix that runs in a lab host, or nothing on loopback."""
    return [] if where == "loopback" else ["ip", "netns", "exec", f"{LAB}-{host}"]


def target(where):
    return "127.0.0.1" if where == "loopback" else "10.211.0.2"


def run(cmd, limit):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def linerate(where, size, seconds, port):
    if where == "loopback":
        srv = subprocess.Popen([LINERATE, "serve", "--bind", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        cmd = [LINERATE, "udp", f"127.0.0.1:{port}"]
    else:
        srv = None  # the lab's own agent in h2
        cmd = [LINERATE, "lab", "exec", "--name", LAB, "h1", "--", LINERATE, "udp", "h2"]
    try:
        doc = run(cmd + ["-l", str(size), "-t", str(seconds), "-i", "0", "--json"], seconds + 60)
    finally:
        if srv:
            srv.kill()
            srv.wait()
    s = doc["summary"]
    secs = s["received"]["seconds"]
    return s["datagrams_received"] / secs, s["datagrams_received"] * size * 8 / secs


def iperf3(where, size, seconds, port):
    srv = subprocess.Popen(ns(where, "h2") + ["iperf3", "-s", "-1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        doc = run(ns(where, "h1") + ["iperf3", "-c", target(where), "-p", str(port), "-u", "-b", "0",
                                     "-l", str(size), "-t", str(seconds), "-J"], seconds + 60)
    finally:
        srv.kill()
        srv.wait()
    e = doc["end"]["sum"]
    got = e["packets"] - e["lost_packets"]
    return got / e["seconds"], got * size * 8 / e["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    benchlib.own_session()
    benchlib.ensure_tools(["iperf3"], ["iperf3"])
    benchlib.build_release()
    subprocess.run([LINERATE, "lab", "down", "--name", LAB], capture_output=True)
    subprocess.run([LINERATE, "lab", "up", "--name", LAB, "--hosts", "2"], check=True, capture_output=True)
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {version}; {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    print(f"{'round':>5} {'where':<9} {'bytes':>5} {'tool':<9} {'rx datagrams/s':>15} {'rx Gbit/s':>10}")
    results = {}
    port = 5460
    try:
        for rnd in range(1, args.rounds + 1):
            for where in ("loopback", "lab veth"):
                for size in (64, 1472):
                    tools = [("linerate", linerate), ("iperf3", iperf3)]
                    if rnd % 2 == 0:
                        tools.reverse()
                    for name, fn in tools:
                        port += 1
                        pps, bps = fn(where, size, args.seconds, port)
                        results.setdefault((where, size, name), []).append((pps, bps))
                        print(f"{rnd:>5} {where:<9} {size:>5} {name:<9} {pps:>15,.0f} {bps / 1e9:>10.3f}", flush=True)
                        time.sleep(1)
    finally:
        subprocess.run([LINERATE, "lab", "down", "--name", LAB], capture_output=True)
    print()
    print(f"{'where':<9} {'bytes':>5} {'linerate dgram/s':>17} {'iperf3':>12} {'ratio':>6}   {'linerate Gbit/s':>15} {'iperf3':>7} {'ratio':>6}")
    for where in ("loopback", "lab veth"):
        for size in (64, 1472):
            lr, ip = results[(where, size, "linerate")], results[(where, size, "iperf3")]
            lp, ipp = statistics.median(x[0] for x in lr), statistics.median(x[0] for x in ip)
            lb, ib = statistics.median(x[1] for x in lr), statistics.median(x[1] for x in ip)
            print(f"{where:<9} {size:>5} {lp:>17,.0f} {ipp:>12,.0f} {lp / ipp:>6.2f}   {lb / 1e9:>15.3f} {ib / 1e9:>7.3f} {lb / ib:>6.2f}")
    print("# medians of received figures; targets: 64 B datagrams/s >= 3x, 1472 B Gbit/s >= 1.5x iperf3")


if __name__ == "__main__":
    main()
