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
import shutil
import statistics
import subprocess
import tempfile
import time

import benchlib
from http_vs_nginx_wrk import Nginx, cpu_seconds

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


def main():
    args = benchlib.arguments(__doc__, 5)
    benchlib.prepare(args, ["nginx", "h2load", "openssl"], ["nginx-light", "nghttp2-client", "openssl"])
    root = tempfile.mkdtemp(prefix="lrbench-www-")
    os.chmod(root, 0o755)
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(os.urandom(1024))
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    h2_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {nginx_version}; {h2_version}; h2load -t 1 -c {CONNECTIONS} -m {STREAMS} -D {args.seconds}; "
          f"{args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    res = {}
    nginx = Nginx(root, tls=True, http2=True)
    servers = {"nginx": nginx}
    try:
        for name, binary in benchlib.binaries(args):
            servers[name] = LinerateHttps(binary, root)
        for rnd in range(1, args.rounds + 1):
            for tool, _ in benchlib.round_order(args, rnd, [("nginx", None)] + benchlib.binaries(args)):
                server = servers[tool]
                rps, cpu_us, err = h2load(server.url("1k.bin"), args.seconds, server.pids)
                res.setdefault(tool, []).append((rps, cpu_us))
                print(f"{rnd:>3} {tool:<9} {rps:>12,.0f} requests/s {cpu_us:>8.1f} us server CPU/request {err}",
                      flush=True)
                time.sleep(0.5)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print()
    med = {tool: [statistics.median(x[i] for x in rows) for i in (0, 1)] for tool, rows in res.items()}
    (lr, lc), (nr, nc) = med["linerate"], med["nginx"]
    print(f"requests/s       linerate {lr:>12,.0f}  nginx {nr:>12,.0f}  ratio {lr / nr:.3f}")
    print(f"CPU us/request   linerate {lc:>12.1f}  nginx {nc:>12.1f}  ratio {lc / nc:.3f}")
    print("# medians; targets (issue 27): >= 1.0x nginx requests/s, <= 1.0x its CPU per request")


if __name__ == "__main__":
    main()
