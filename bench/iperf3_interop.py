#!/usr/bin/env python3
"""linerate speaking iperf3's protocol, beside iperf3 itself, on loopback (issue 26).

Two comparisons, each over interleaved rounds, TCP at 1 and 4 streams:

  client: linerate's client against `iperf3 -s`  beside  iperf3's client against `iperf3 -s`
          (receiver throughput; the CLIENT process's CPU seconds per gigabit received)
  server: iperf3's client against `linerate serve --iperf3-port`  beside  against `iperf3 -s`
          (receiver throughput; the SERVER process's CPU seconds per gigabit received)

CPU is user + system time of the one process compared (getrusage of the client as a child;
/proc/PID/stat of the server, started fresh for every run), over the gigabits the receiver
counted (1 Gbit = 10^9 bits). Prints every run, then the medians and the ratios linerate/iperf3:
throughput >= 1 and CPU per Gbit <= 1 favour linerate. Run it as root on a quiet machine:

    python3 bench/iperf3_interop.py [--seconds 5] [--rounds 5]

It re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs
iperf3 (Debian) and builds linerate (release) when they are missing. Sends traffic to 127.0.0.1
only.
"""
import os
import statistics
import subprocess
import time

import benchlib

LINERATE = benchlib.LINERATE


def server(kind, port):
    if kind == "linerate":
        cmd = [LINERATE, "serve", "--bind", "127.0.0.1", "--port", str(port + 1000), "--iperf3-port", str(port)]
    else:
        cmd = ["iperf3", "-s", "-p", str(port), "-B", "127.0.0.1"]
    return benchlib.start_server(cmd, port)


def iperf3_client(streams, seconds, port):
    cmd = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-P", str(streams), "-t", str(seconds), "-J"]
    doc, cpu = benchlib.run_json_cpu(cmd, seconds + 30)
    received = doc["end"]["sum_received"]
    return received["bytes"], received["seconds"], cpu


def linerate_client(streams, seconds, port):
    cmd = [LINERATE, "tcp", f"iperf3://127.0.0.1:{port}", "-P", str(streams), "-t", str(seconds), "-i", "0",
           "--json"]
    doc, cpu = benchlib.run_json_cpu(cmd, seconds + 30)
    received = doc["summary"]["received"]
    return received["bytes"], received["seconds"], cpu


# (comparison, tool) -> how one run goes: which server, which client, whose CPU counts.
RUNS = {
    ("client", "linerate"): ("iperf3", linerate_client, "client"),
    ("client", "iperf3"): ("iperf3", iperf3_client, "client"),
    ("server", "linerate"): ("linerate", iperf3_client, "server"),
    ("server", "iperf3"): ("iperf3", iperf3_client, "server"),
}


def one(comparison, tool, streams, seconds, port):
    server_kind, client, whose = RUNS[(comparison, tool)]
    srv = server(server_kind, port)
    try:
        nbytes, secs, client_cpu = client(streams, seconds, port)
    finally:
        server_cpu = benchlib.stop_server(srv)
    cpu = client_cpu if whose == "client" else server_cpu
    return nbytes * 8 / secs, cpu / (nbytes * 8 / 1e9)


PEER = "iperf3"
NEEDS = (["iperf3"], ["iperf3"])  # commands, and the Debian packages that bring them
DEFAULT_SECONDS = 5
CASES = [(comparison, streams) for comparison in ("client", "server") for streams in (1, 4)]


def runs_per_round(args):
    return 2 * len(CASES)


def setup(args):
    return {"port": 5611}


def teardown(ctx):
    pass


def run_round(args, rnd, ctx, log=print):
    """One round: each comparison and stream count, linerate and iperf3 (alternating which goes
    first). Returns rows ((comparison, streams), tool, (bits/s, CPU s per Gbit))."""
    rows = []
    for comparison, streams in CASES:
        tools = ["linerate", "iperf3"] if rnd % 2 else ["iperf3", "linerate"]
        for tool in tools:
            ctx["port"] += 2
            bps, per_gbit = one(comparison, tool, streams, args.seconds, ctx["port"])
            rows.append(((comparison, streams), tool, (bps, per_gbit)))
            log(f"{rnd:>5} {comparison:<7} {streams:>2} {tool:<9} {bps / 1e6:>10.1f} {per_gbit:>11.4f}", flush=True)
            time.sleep(1)
    return rows


def pairs(rows):
    """One round's rows as linerate/iperf3 pairs: Mbit/s received, CPU s per Gbit of the process
    compared (the client's for "client", the server's for "server")."""
    got = {(k, tool): v for k, tool, v in rows}
    return [benchlib.Pair(f"{comparison} -P {streams}", "Mbit/s", got[((comparison, streams), "linerate")][0] / 1e6,
                          got[((comparison, streams), "iperf3")][0] / 1e6, f"{comparison} CPU s/Gbit",
                          got[((comparison, streams), "linerate")][1], got[((comparison, streams), "iperf3")][1])
            for comparison, streams in CASES]


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    version = subprocess.run(["iperf3", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {version}; linerate {benchlib.version(LINERATE)}")
    print(f"# loopback, TCP, {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    print(f"{'round':>5} {'compare':<7} {'P':>2} {'tool':<9} {'Mbit/s':>10} {'CPU s/Gbit':>11}")
    rows = {}
    ctx = setup(args)
    for (comparison, streams), tool, values in benchlib.rounds(args, run_round, ctx):
        rows.setdefault((comparison, streams, tool), []).append(values)
    print()
    print(f"{'compare':<7} {'P':>2} {'linerate Mbit/s':>16} {'iperf3 Mbit/s':>14} {'ratio':>6} "
          f"{'spread':>13}   {'CPU s/Gbit':>10} {'iperf3':>8} {'ratio':>6}")
    for comparison in ("client", "server"):
        for streams in (1, 4):
            lr, ip = rows[(comparison, streams, "linerate")], rows[(comparison, streams, "iperf3")]
            lt, it = statistics.median(x[0] for x in lr), statistics.median(x[0] for x in ip)
            lc, ic = statistics.median(x[1] for x in lr), statistics.median(x[1] for x in ip)
            ratios = sorted(a[0] / b[0] for a, b in zip(lr, ip))
            spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
            print(f"{comparison:<7} {streams:>2} {lt / 1e6:>16.1f} {it / 1e6:>14.1f} {lt / it:>6.3f} {spread:>13}   "
                  f"{lc:>10.4f} {ic:>8.4f} {lc / ic:>6.3f}")
    print("# medians; spread: the lowest and highest per-round throughput ratio; "
          "client: the client process's CPU, server: the server process's")


if __name__ == "__main__":
    main()
