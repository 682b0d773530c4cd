#!/usr/bin/env python3
"""linerate's HTTP/2 client beside h2load against nginx on loopback (issue 27).

Two parts, each case run by both tools in interleaved rounds, the same load:
1. 1 KiB requests/s with 16 connections of 10 concurrent streams (h2load -t 1 -c 16 -m 10;
   linerate http --http2 --threads 1 --users 16 --streams 10), over TLS (ALPN h2, TLS 1.3) and
   h2c (prior knowledge): requests/s (succeeded, h2load's figure; linerate's 2xx responses per
   second of its window) and the client's CPU per request (user + system time of the client
   process, from wait4's rusage, over the requests that succeeded).
2. requests/s as streams per connection grow: 1, 2, 5, 10, 20, 50, 100 (16 connections, TLS).
nginx runs 2 workers, HTTP/2 on its listener (`listen ... ssl http2` and `listen ... http2`),
access log off.

Run as root on a quiet machine:

    python3 bench/h2_client_vs_h2load.py [--seconds 5] [--rounds 3]

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Sends traffic
to 127.0.0.1 only; finishes in about (4 x rounds + 14) x (seconds + 1) seconds.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import benchlib
from http_vs_nginx_wrk import Nginx

CONNECTIONS, STREAMS = 16, 10
SWEEP = [1, 2, 5, 10, 20, 50, 100]


def timed(cmd, limit):
    """Runs `cmd` to its end: (stdout, the child's user + system CPU seconds)."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        deadline = time.time() + limit
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return out.read().decode(), usage.ru_utime + usage.ru_stime


def h2load(url, streams, seconds):
    """Requests/s, client CPU microseconds per request, and a note on failures."""
    out, cpu = timed(["h2load", "-t", "1", "-c", str(CONNECTIONS), "-m", str(streams), "-D", str(seconds), url],
                     seconds + 60)
    rps, ok, note = benchlib.h2load_figures(out, url)
    return rps, cpu * 1e6 / max(ok, 1), note


def linerate(binary, url, streams, seconds):
    tls = ["--insecure"] if url.startswith("https") else []
    out, cpu = timed([binary, "http", url, "--http2", "--threads", "1", "--users", str(CONNECTIONS),
                      "--streams", str(streams), "--ramp", "0", "-d", str(seconds), "--no-agent", "--json"] + tls,
                     seconds + 60)
    try:
        h = json.loads(out)["summary"]
    except (ValueError, KeyError):
        raise SystemExit(f"linerate http failed on {url}:\n{out[:2000]}")
    rps = h["successful_responses_per_second"]
    # The process's CPU over the run (its start and end too), per response of the run's window
    # (all of it: no ramp).
    failed = h["errors"]["total"]
    return rps, cpu * 1e6 / max(h["responses"], 1), (f"{failed} failed" if failed else "")


PEER = "h2load"
NEEDS = (["nginx", "h2load", "openssl"], ["nginx-light", "nghttp2-client", "openssl"])
DEFAULT_SECONDS = 5
CASES = ("tls", "h2c")


def tools(args):
    return [("h2load", None)] + benchlib.binaries(args)


def one(args, tool, binary, url, streams):
    if tool == "h2load":
        return h2load(url, streams, args.seconds)
    return linerate(binary, url, streams, args.seconds)


def runs_per_round(args):
    return len(CASES) * len(tools(args))


def setup(args):
    """The file served and nginx over TLS and h2c (stopped and removed by teardown)."""
    ctx = {"root": benchlib.www_root({"1k.bin": 1024}), "servers": {}}
    try:
        ctx["servers"] = {"tls": Nginx(ctx["root"], tls=True, http2=True),
                          "h2c": Nginx(ctx["root"], tls=False, http2=True)}
    except BaseException:
        teardown(ctx)
        raise
    return ctx


def teardown(ctx):
    for server in ctx["servers"].values():
        server.stop()
    shutil.rmtree(ctx["root"], ignore_errors=True)


def run_round(args, rnd, ctx, log=print):
    """One round: each case (TLS, h2c) by h2load and each linerate build. Returns rows
    (case, tool, (requests/s, client CPU us per request))."""
    rows = []
    for case in CASES:
        server = ctx["servers"][case]
        for tool, binary in benchlib.round_order(args, rnd, tools(args)):
            rps, cpu_us, err = one(args, tool, binary, server.url("1k.bin"), STREAMS)
            rows.append((case, tool, (rps, cpu_us)))
            log(f"{rnd:>3} {case:<4} {tool:<9} {rps:>12,.0f} requests/s {cpu_us:>8.2f} us client CPU/request "
                f"{err}", flush=True)
            time.sleep(0.5)
    return rows


def pairs(rows):
    """One round's rows as linerate/h2load pairs: requests/s and client CPU us per request."""
    got = {(case, tool): v for case, tool, v in rows}
    return [benchlib.Pair(f"client h2 {case} 1 KiB, -c {CONNECTIONS} -m {STREAMS}", "requests/s",
                          got[(case, "linerate")][0], got[(case, "h2load")][0], "client CPU us/request",
                          got[(case, "linerate")][1], got[(case, "h2load")][1]) for case in CASES]


def streams_sweep(args, ctx):
    """One round of requests/s as streams per connection grow, over TLS, each tool in turn."""
    print()
    print("# requests/s as streams per connection grow (TLS, 16 connections, one round)")
    sweep = {}
    for streams in SWEEP:
        for tool, binary in tools(args):
            rps, _, err = one(args, tool, binary, ctx["servers"]["tls"].url("1k.bin"), streams)
            sweep[(streams, tool)] = rps
            time.sleep(0.5)
        row = "  ".join(f"{tool} {sweep[(streams, tool)]:>10,.0f}" for tool, _ in tools(args))
        print(f"streams {streams:>3}  {row}  ratio {sweep[(streams, 'linerate')] / sweep[(streams, 'h2load')]:.3f}",
              flush=True)


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    versions = [subprocess.run(cmd, capture_output=True, text=True) for cmd in (["nginx", "-v"], ["h2load", "--version"])]
    print(f"# {versions[0].stderr.strip()}; {versions[1].stdout.strip()}; -c {CONNECTIONS} -m {STREAMS} -D {args.seconds}, one client thread; "
          f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    res = benchlib.collect(args, setup, run_round, teardown, then=lambda ctx: streams_sweep(args, ctx))
    print()
    print("# medians, -c 16 -m 10; ratio linerate/h2load")
    for case in CASES:
        (lr, lc), (hr, hc) = ([statistics.median(x[i] for x in res[(case, tool)]) for i in (0, 1)]
                              for tool in ("linerate", "h2load"))
        print(f"{case:<4} requests/s       linerate {lr:>12,.0f}  h2load {hr:>12,.0f}  ratio {lr / hr:.3f}")
        print(f"{case:<4} CPU us/request   linerate {lc:>12.2f}  h2load {hc:>12.2f}  ratio {lc / hc:.3f}")
    if args.before:
        benchlib.print_before("h2load", {(t, c): r for (c, t), r in res.items()},
                              [(c, lambda tool, c=c: (tool, c)) for c in CASES],
                              [("requests/s", 0, 1), ("CPU us/req", 1, 1)])
    print("# target (issue 27): >= 1.0x h2load requests/s with the same connections and streams")


if __name__ == "__main__":
    main()
