#!/usr/bin/env python3
"""linerate beside iperf3 on loopback at many streams: TCP, -P 1, 16 and 128, interleaved rounds.

Prints each run, then per stream count the medians of receiver throughput (Mbit/s, as the
receiving end counted it) and of peak memory (maximum resident set: the server's VmHWM from
/proc/PID/status just before it is stopped, the client's from /usr/bin/time's %M) of both ends,
client and server (linerate's agent), with the ratios linerate/iperf3. Run it as root on a quiet machine:

    python3 bench/tcp_streams_vs_iperf3.py [--seconds 4] [--rounds 3] [--streams 1,16,128]

Both tools run with their defaults otherwise (128 KiB buffers, no interval reports). It re-runs
itself in a session of its own (setsid) with a raised autogroup priority, installs iperf3
(Debian) and builds linerate (release) when they are missing. Sends traffic to 127.0.0.1 only.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import benchlib

LINERATE = benchlib.LINERATE


def vm_hwm_kib(pid):
    """Peak resident memory of a running process so far (VmHWM in /proc/PID/status), KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise SystemExit(f"no VmHWM for process {pid}")


def run_client(cmd, limit):
    """Runs the client to its end; returns its JSON document, its peak memory in KiB and its CPU
    seconds (user + system, as /usr/bin/time reports them).

    The peak comes from /usr/bin/time (%M, from wait4's rusage), not from this script's own
    wait4: Linux carries the forking process's peak into the child's maxrss across exec, and
    time's is about 1 MiB where this Python's is about 15."""
    with tempfile.NamedTemporaryFile("r") as peak:
        out = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", peak.name] + cmd, capture_output=True,
                             timeout=limit)
        if out.returncode != 0:
            raise SystemExit(f"{cmd[0]} failed ({out.returncode}): {out.stderr.decode().strip()}")
        user, system, kib = peak.read().split()[-3:]
        return json.loads(out.stdout), int(kib), float(user) + float(system)


def stop_server(srv):
    """Stops a server; returns its peak memory in KiB and its CPU seconds, read while it still runs."""
    kib = vm_hwm_kib(srv.pid)
    return kib, benchlib.stop_server(srv)


def linerate(streams, seconds, port):
    srv = benchlib.start_server([LINERATE, "serve", "--bind", "127.0.0.1", "--port", str(port)], port)
    doc, client_kib, client_cpu = run_client(
        [LINERATE, "tcp", f"127.0.0.1:{port}", "-P", str(streams), "-t", str(seconds), "-i", "0", "--json"],
        seconds + 60,
    )
    server_kib, server_cpu = stop_server(srv)
    received = doc["summary"]["received"]
    return received["bits_per_second"], client_kib, server_kib, (client_cpu + server_cpu) / (received["bytes"] * 8 / 1e9)


def iperf3(streams, seconds, port):
    srv = benchlib.start_server(["iperf3", "-s", "-p", str(port), "-B", "127.0.0.1"], port)
    doc, client_kib, client_cpu = run_client(
        ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-P", str(streams), "-t", str(seconds), "-i", "0", "-J"],
        seconds + 60,
    )
    server_kib, server_cpu = stop_server(srv)
    received = doc["end"]["sum_received"]
    return received["bits_per_second"], client_kib, server_kib, (client_cpu + server_cpu) / (received["bytes"] * 8 / 1e9)


PEER = "iperf3"
NEEDS = (["iperf3"], ["iperf3"])  # commands, and the Debian packages that bring them
DEFAULT_SECONDS = 4
EXTRA_DEFAULTS = {"streams": "1,16,128"}


def counts(args):
    return [int(p) for p in args.streams.split(",")]


def runs_per_round(args):
    return 2 * len(counts(args))


def setup(args):
    return {"port": 5511}


def teardown(ctx):
    pass


def run_round(args, rnd, ctx, log=print):
    """One round: every stream count, linerate and iperf3 (alternating which goes first).
    Returns rows (streams, tool, (bits/s, client KiB, server KiB, CPU s per Gbit))."""
    rows = []
    for streams in counts(args):
        tools = [("linerate", linerate), ("iperf3", iperf3)]
        if rnd % 2 == 0:
            tools.reverse()
        for name, fn in tools:
            ctx["port"] += 1
            bps, client_kib, server_kib, per_gbit = fn(streams, args.seconds, ctx["port"])
            rows.append((streams, name, (bps, client_kib, server_kib, per_gbit)))
            log(f"{rnd:>5} {streams:>3} {name:<9} {bps / 1e6:>10.1f} {client_kib / 1024:>10.1f} "
                f"{server_kib / 1024:>10.1f} {per_gbit:>11.4f}", flush=True)
            time.sleep(1)
    return rows


def pairs(rows):
    """One round's rows as linerate/iperf3 pairs: Mbit/s received, CPU s per Gbit (both ends)."""
    got = {(k, tool): v for k, tool, v in rows}
    return [benchlib.Pair(f"-P {n}", "Mbit/s", got[(n, "linerate")][0] / 1e6, got[(n, "iperf3")][0] / 1e6,
                          "CPU s/Gbit", got[(n, "linerate")][3], got[(n, "iperf3")][3])
            for n in sorted({k for k, _, _ in rows})]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=DEFAULT_SECONDS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--streams", default="1,16,128", help="stream counts, comma-separated")
    benchlib.warmup_option(ap)
    args = benchlib.checked(ap)
    benchlib.own_session()
    benchlib.ensure_tools(*NEEDS)
    benchlib.build_release()
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    mine = subprocess.run([LINERATE, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {version}; {mine}")
    print(f"# loopback, {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    print(f"{'round':>5} {'P':>3} {'tool':<9} {'Mbit/s':>10} {'client MiB':>10} {'server MiB':>10} {'CPU s/Gbit':>11}")
    results = benchlib.collect(args, setup, run_round, teardown, pick=lambda values: values[:3])
    print()
    print(
        f"{'P':>3} {'linerate Mbit/s':>16} {'iperf3 Mbit/s':>14} {'ratio':>6}   "
        f"{'client MiB lr/ip':>17} {'ratio':>6}   {'server MiB lr/ip':>17} {'ratio':>6}"
    )
    for streams in counts(args):
        lr, ip = results[(streams, "linerate")], results[(streams, "iperf3")]
        med = [[statistics.median(x[k] for x in rows) for k in range(3)] for rows in (lr, ip)]
        (lt, lc, ls), (it, ic, is_) = med
        print(
            f"{streams:>3} {lt / 1e6:>16.1f} {it / 1e6:>14.1f} {lt / it:>6.3f}   "
            f"{lc / 1024:>8.1f}/{ic / 1024:<8.1f} {lc / ic:>6.2f}   {ls / 1024:>8.1f}/{is_ / 1024:<8.1f} {ls / is_:>6.2f}"
        )
    print("# medians; throughput ratio >= 1 and memory ratios <= 2 meet issue 12's target")


if __name__ == "__main__":
    main()
