#!/usr/bin/env python3
"""linerate's HTTP/2 server beside nginx's, both over TLS, under h2load on loopback (issue 27).

One case, the same load on each server in interleaved rounds: h2load -t 1 -c 16 -m 10 (16
connections, 10 concurrent streams each, ALPN h2, TLS 1.3) for --seconds, fetching a 1 KiB file
(nginx: its root; linerate: `serve --https-port --file`, /files/1k.bin). Figures: requests/s as
h2load reports them (succeeded over the run) and the server's CPU per request (user + system
time of its processes over the run, /proc/PID/stat, divided by the requests that succeeded).
nginx runs 2 workers, linerate one worker per CPU (its default); both use an ECDSA P-256
certificate (nginx's made with openssl, linerate's generated at start with rcgen).

Run as root on a quiet machine:

    python3 bench/h2_server_vs_nginx.py [--seconds 5] [--rounds 3]

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Sends traffic
to 127.0.0.1 only.
"""
import os
import statistics
import subprocess
import time

import benchlib
import http_vs_nginx_wrk
from http_vs_nginx_wrk import cpu_seconds, nginx_serving

CONNECTIONS, STREAMS = 16, 10


class LinerateHttps:
    def __init__(self, binary, root):
        self.port = benchlib.free_port()
        self.proc = benchlib.start_server(
            [binary, "serve", "--bind", "127.0.0.1", "--port", str(benchlib.free_port()),
             "--http-port", str(benchlib.free_port()), "--https-port", str(self.port), "--file", os.path.join(root, "1k.bin")], self.port)
        self.pids = [self.proc.pid]

    def url(self, name):
        return f"https://127.0.0.1:{self.port}/files/{name}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def h2load(url, seconds, pids):
    """Requests/s, server CPU microseconds per request, and a note on failures."""
    before = cpu_seconds(pids)
    out = subprocess.run(["h2load", "-t", "1", "-c", str(CONNECTIONS), "-m", str(STREAMS), "-D", str(seconds), url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    cpu = cpu_seconds(pids) - before
    rps, ok, note = benchlib.h2load_figures(out, url)
    return rps, cpu * 1e6 / max(ok, 1), note


PEER = "nginx"
NEEDS = (["nginx", "h2load", "openssl"], ["nginx-light", "nghttp2-client", "openssl"])
DEFAULT_SECONDS = 5


def runs_per_round(args):
    return 2 + bool(args.before)


def setup(args):
    """The file served, nginx and each linerate build serving it over TLS (stopped by teardown)."""
    ctx = nginx_serving({"1k.bin": 1024}, tls=True, http2=True)
    ctx["servers"] = {"nginx": ctx["nginx"]}
    try:
        for name, binary in benchlib.binaries(args):
            ctx["servers"][name] = LinerateHttps(binary, ctx["root"])
    except BaseException:
        teardown(ctx)
        raise
    return ctx


def teardown(ctx):
    for name, server in ctx["servers"].items():
        if name != "nginx":
            server.stop()
    http_vs_nginx_wrk.teardown(ctx)


def run_round(args, rnd, ctx, log=print):
    """One round: h2load against nginx and against each linerate build. Returns rows
    ("h2", tool, (requests/s, server CPU us per request))."""
    rows = []
    for tool, _ in benchlib.round_order(args, rnd, [("nginx", None)] + benchlib.binaries(args)):
        server = ctx["servers"][tool]
        rps, cpu_us, err = h2load(server.url("1k.bin"), args.seconds, server.pids)
        rows.append(("h2", tool, (rps, cpu_us)))
        log(f"{rnd:>3} {tool:<9} {rps:>12,.0f} requests/s {cpu_us:>8.1f} us server CPU/request {err}", flush=True)
        time.sleep(0.5)
    return rows


def pairs(rows):
    """One round's rows as the linerate/nginx pair: requests/s and the server's CPU per request."""
    got = {tool: v for _, tool, v in rows}
    return [benchlib.Pair(f"server h2 TLS 1 KiB, h2load -c {CONNECTIONS} -m {STREAMS}", "requests/s",
                          got["linerate"][0], got["nginx"][0], "server CPU us/request", got["linerate"][1],
                          got["nginx"][1])]


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    h2_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {nginx_version}; {h2_version}; h2load -t 1 -c {CONNECTIONS} -m {STREAMS} -D {args.seconds}; "
          f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    res = {}
    ctx = setup(args)
    try:
        for _, tool, values in benchlib.rounds(args, run_round, ctx):
            res.setdefault(tool, []).append(values)
    finally:
        teardown(ctx)
    print()
    med = {tool: [statistics.median(x[i] for x in rows) for i in (0, 1)] for tool, rows in res.items()}
    (lr, lc), (nr, nc) = med["linerate"], med["nginx"]
    print(f"requests/s       linerate {lr:>12,.0f}  nginx {nr:>12,.0f}  ratio {lr / nr:.3f}")
    print(f"CPU us/request   linerate {lc:>12.1f}  nginx {nc:>12.1f}  ratio {lc / nc:.3f}")
    print("# medians; targets (issue 27): >= 1.0x nginx requests/s, <= 1.0x its CPU per request")


if __name__ == "__main__":
    main()
