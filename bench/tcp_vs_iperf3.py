#!/usr/bin/env python3
"""linerate beside iperf3 on loopback: TCP, 1 and 2 streams, 10 s, three interleaved rounds.

Prints each run, then the median ratio linerate/iperf3 of receiver throughput and of CPU seconds
per gigabit (client + server process CPU time, user + system, over the gigabits the receiver
counted). Run it as root on a quiet machine:

    python3 bench/tcp_vs_iperf3.py [--seconds 10] [--rounds 3]

It re-runs itself in a session of its own (setsid) with a raised autogroup priority, so that
other sessions' load does not win the CPU. Installs iperf3 (Debian) and builds linerate
(release) when they are missing. Sends traffic to 127.0.0.1 only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import time

import benchlib

ROOT = benchlib.ROOT
LINERATE = benchlib.LINERATE
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 (1-based) of proc(5); after the ")" they are 12 and 13.
    return (int(fields[11]) + int(fields[12])) / TICK


def run_client(cmd, limit):
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    after = os.times()
    if out.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {out.stderr.strip()}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return json.loads(out.stdout), cpu


def listening(port):
    """True when something listens on TCP `port` (from /proc/net/tcp{,6}; state 0A = LISTEN)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    local, state = line.split()[1], line.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def start_server(cmd, port):
    # Servers' stdout is block-buffered into a pipe, so readiness is read off the kernel instead.
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        if listening(port):
            return srv
        time.sleep(0.05)
    srv.kill()
    raise SystemExit(f"{cmd[0]} server did not start")


def stop_server(srv):
    cpu = proc_cpu_seconds(srv.pid)
    srv.kill()
    srv.wait()
    return cpu


def linerate(streams, seconds, port):
    srv = start_server([LINERATE, "serve", "--bind", "127.0.0.1", "--port", str(port)], port)
    doc, client_cpu = run_client(
        [LINERATE, "tcp", f"127.0.0.1:{port}", "-P", str(streams), "-t", str(seconds), "-i", "0", "--json"],
        seconds + 30,
    )
    server_cpu = stop_server(srv)
    received = doc["summary"]["received"]
    return received["bits_per_second"], received["bytes"], client_cpu + server_cpu


def iperf3(streams, seconds, port):
    srv = start_server(["iperf3", "-s", "-p", str(port), "-B", "127.0.0.1"], port)
    doc, client_cpu = run_client(
        ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-P", str(streams), "-t", str(seconds), "-J"], seconds + 30
    )
    server_cpu = stop_server(srv)
    received = doc["end"]["sum_received"]
    return received["bits_per_second"], received["bytes"], client_cpu + server_cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    benchlib.own_session()
    benchlib.ensure_tools(["iperf3"], ["iperf3"])
    benchlib.build_release()
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {version}; linerate {subprocess.run([LINERATE, '--version'], capture_output=True, text=True).stdout.strip()}")
    print(f"# loopback, {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    print(f"{'round':>5} {'P':>2} {'tool':<9} {'Mbit/s':>10} {'CPU s':>7} {'CPU s/Gbit':>11}")
    results = {}
    port = 5411
    for rnd in range(1, args.rounds + 1):
        for streams in (1, 2):
            tools = [("linerate", linerate), ("iperf3", iperf3)]
            if rnd % 2 == 0:
                tools.reverse()
            for name, fn in tools:
                port += 1
                bps, nbytes, cpu = fn(streams, args.seconds, port)
                per_gbit = cpu / (nbytes * 8 / 1e9)
                results.setdefault((streams, name), []).append((bps, per_gbit))
                print(f"{rnd:>5} {streams:>2} {name:<9} {bps / 1e6:>10.1f} {cpu:>7.2f} {per_gbit:>11.4f}", flush=True)
                time.sleep(1)
    print()
    print(f"{'P':>2} {'linerate Mbit/s':>16} {'iperf3 Mbit/s':>14} {'ratio':>6}   {'linerate CPU s/Gbit':>19} {'iperf3':>8} {'ratio':>6}")
    for streams in (1, 2):
        lr, ip = results[(streams, "linerate")], results[(streams, "iperf3")]
        lt, it = statistics.median(x[0] for x in lr), statistics.median(x[0] for x in ip)
        lc, ic = statistics.median(x[1] for x in lr), statistics.median(x[1] for x in ip)
        print(f"{streams:>2} {lt / 1e6:>16.1f} {it / 1e6:>14.1f} {lt / it:>6.3f}   {lc:>19.4f} {ic:>8.4f} {lc / ic:>6.3f}")
    print("# medians; throughput ratio >= 1 and CPU ratio <= 1 favour linerate")


if __name__ == "__main__":
    main()
