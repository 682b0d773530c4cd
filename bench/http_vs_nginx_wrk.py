#!/usr/bin/env python3
"""linerate http beside wrk, and linerate's HTTP server beside nginx, on loopback.

Client (same nginx, keep-alive, interleaved rounds):
  1 KiB objects, 64 users: responses/s, linerate http --users 64 --keepalive vs wrk -c 64;
  512 KiB objects, 240 users: Gbit/s of responses read, linerate vs wrk -c 240.
Server (the same client, wrk -c 240, for both servers):
  512 KiB objects: Gbit/s served and the server processes' CPU per Gbit/s (utime + stime from
  /proc/PID/stat of every server process, over the run), linerate serve --http-port vs nginx.

Run as root on a quiet machine:

    python3 bench/http_vs_nginx_wrk.py [--seconds 5] [--rounds 3] [--before PATH]

With --before PATH (another linerate binary) every round runs wrk (or nginx), this build, then
PATH, and last tables give each build's ratio to the peer and the after/before ratio of the medians.

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs nginx
and wrk (Debian) when missing; writes nginx's config in a temporary directory. Sends traffic to
127.0.0.1 only.
"""
import functools
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import benchlib


free_port = benchlib.free_port
wait_port = benchlib.wait_port


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            total += benchlib.proc_cpu_seconds(pid)
        except OSError:
            pass
    return total


def tree(pid):
    """pid and its children (nginx workers)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid] + [int(p) for p in out]


class Nginx:
    """nginx serving `root` on a free port of 127.0.0.1, 2 workers, access log off; with `tls`,
    https only (TLS 1.2 and 1.3, an ECDSA P-256 certificate made with openssl, session cache and
    tickets); with `http2`, HTTP/2 too (by ALPN over TLS)."""

    def __init__(self, root, tls=False, http2=False):
        self.dir = tempfile.mkdtemp(prefix="lrbench-nginx-")
        self.port = free_port()
        self.scheme = "https" if tls else "http"
        d = self.dir
        ssl = ""
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                            "-days", "30", "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem"],
                           check=True, capture_output=True)
            ssl = (f"ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; ssl_protocols TLSv1.2 TLSv1.3; "
                   "ssl_session_cache shared:SSL:10m; ssl_session_tickets on;")
        conf = f"""user root; worker_processes 2; pid {d}/nginx.pid; error_log {d}/error.log; daemon off;
events {{ worker_connections 8192; }}
http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000000;
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{ listen 127.0.0.1:{self.port}{" ssl" if tls else ""}{" http2" if http2 else ""} reuseport; root {root}; {ssl} }} }}
"""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        time.sleep(0.3)
        self.pids = tree(self.proc.pid)

    def url(self, name):
        return f"{self.scheme}://127.0.0.1:{self.port}/{name}"

    def stop(self):
        subprocess.run(["kill", "-QUIT", str(self.proc.pid)])
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class LinerateServer:
    def __init__(self, binary, root):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1", "--port", str(free_port()),
                                      "--http-port", str(self.port), "--file", os.path.join(root, "512k.bin"),
                                      "--file", os.path.join(root, "1k.bin")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)
        self.pids = [self.proc.pid]

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/files/{name}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def wrk(url, conns, seconds):
    out = subprocess.run(["wrk", "-t", "2", "-c", str(conns), "-d", f"{seconds}s", url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)", out)
    return rps, (errors.group(0) if errors else "")


def linerate_http(binary, url, users, seconds):
    s = benchlib.run_json([binary, "http", url, "--users", str(users), "--keepalive", "-d", f"{seconds}s",
                           "-i", "0", "--no-agent", "--json"], seconds + 60)["summary"]
    return s["responses_per_second"], s["bits_per_second_in"], s["errors"]["total"]


def response_bytes(url):
    """Head plus body of one response, as the wire carries it."""
    host, rest = url[len("http://"):].split("/", 1)
    h, p = host.split(":")
    s = socket.create_connection((h, int(p)))
    s.sendall(f"GET /{rest} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    n = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            return n
        n += len(b)


def stop_packaged_nginx():
    """Stops the nginx the Debian package may have started (by the pid it wrote), not any other."""
    try:
        with open("/run/nginx.pid") as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return
    subprocess.run(["kill", "-QUIT", str(pid)], stderr=subprocess.DEVNULL)


PEER = "wrk, nginx"
NEEDS = (["nginx", "wrk"], ["nginx-light", "wrk"])  # commands, and the Debian packages that bring them
DEFAULT_SECONDS = 5
CLIENT_CASES = (("1k.bin", 64), ("512k.bin", 240))


def runs_per_round(args):
    return (len(CLIENT_CASES) + 1) * (2 + bool(args.before))


def setup(args):
    """The files served, and nginx serving them to the client cases (stopped by teardown)."""
    stop_packaged_nginx()
    ctx = nginx_serving({"1k.bin": 1024, "512k.bin": 512 * 1024})
    try:
        ctx["sizes"] = {name: response_bytes(ctx["nginx"].url(name)) for name, _ in CLIENT_CASES}
    except BaseException:
        teardown(ctx)
        raise
    return ctx


def nginx_serving(files, **nginx_options):
    """A temporary web root holding `files` (name -> bytes of random data) and an nginx serving
    it (Nginx's options); the context `teardown` stops and removes."""
    root = tempfile.mkdtemp(prefix="lrbench-www-")
    os.chmod(root, 0o755)
    for name, size in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(os.urandom(size))
    ctx = {"root": root, "nginx": None}
    try:
        ctx["nginx"] = Nginx(root, **nginx_options)
    except BaseException:
        teardown(ctx)
        raise
    return ctx


def teardown(ctx):
    if ctx["nginx"]:
        ctx["nginx"].stop()
    shutil.rmtree(ctx["root"], ignore_errors=True)


def run_round(args, rnd, ctx, log=print):
    """One round: the client cases (wrk and linerate against nginx), then the server case (wrk
    against nginx and against linerate serve). Returns rows
    (("client", name) or ("server",), tool, (responses/s, Gbit/s, client CPU)) for the client,
    where the CPU is us per response for 1 KiB and s per Gbit for 512 KiB, and
    (("server",), tool, (Gbit/s, % of a core per Gbit/s)) for the server."""
    rows = []
    builds = benchlib.binaries(args)
    nginx = ctx["nginx"]
    log("# client: against nginx, keep-alive")
    for name, users in CLIENT_CASES:
        size = ctx["sizes"][name]
        runs = builds[:1] + [("wrk", None)] + builds[1:]
        for tool, binary in benchlib.round_order(args, rnd, runs):
            before = benchlib.children_cpu_seconds()
            if tool == "wrk":
                rps, err = wrk(nginx.url(name), users, args.seconds)
                gbps = rps * size * 8 / 1e9
            else:
                rps, bps, nerr = linerate_http(binary, nginx.url(name), users, args.seconds)
                gbps, err = bps / 1e9, (f"errors {nerr}" if nerr else "")
            cpu = benchlib.children_cpu_seconds() - before
            # Per unit of the case's figure: a response (1 KiB) or a gigabit (512 KiB).
            per = cpu * 1e6 / max(rps * args.seconds, 1) if name == "1k.bin" else cpu / max(gbps * args.seconds, 1e-9)
            rows.append((("client", name), tool, (rps, gbps, per)))
            log(f"{rnd:>3} {name:<9} {users:>4} users {tool:<9} {rps:>12,.0f} responses/s {gbps:>8.3f} Gbit/s {err}",
                flush=True)
            time.sleep(0.5)
    log("# server: wrk -c 240 -t 2 fetching 512 KiB, keep-alive")
    runs = [(name, functools.partial(LinerateServer, binary)) for name, binary in builds]
    for name, start in benchlib.round_order(args, rnd, runs[:1] + [("nginx", Nginx)] + runs[1:]):
        srv = start(ctx["root"])
        try:
            before = cpu_seconds(srv.pids)
            t = time.time()
            rps, err = wrk(srv.url("512k.bin"), 240, args.seconds)
            wall = time.time() - t
            cpu = cpu_seconds(srv.pids) - before
        finally:
            srv.stop()
        gbps = rps * ctx["sizes"]["512k.bin"] * 8 / 1e9
        # CPU % of one core per Gbit/s, over the wrk run.
        per_gbit = 100 * cpu / wall / gbps if gbps > 0 else float("nan")
        rows.append((("server",), name, (gbps, per_gbit)))
        log(f"{rnd:>3} server {name:<9} {gbps:>8.3f} Gbit/s  {per_gbit:>7.2f} % of a core per Gbit/s {err}", flush=True)
        time.sleep(0.5)
    return rows


def pairs(rows):
    """One round's rows as linerate/peer pairs: the client against wrk (1 KiB responses/s with the
    client's CPU per response; 512 KiB Gbit/s with its CPU per Gbit), the server against nginx
    (512 KiB Gbit/s with the server's CPU, % of a core per Gbit/s)."""
    got = {(k, tool): v for k, tool, v in rows}
    lr, wk = got[(("client", "1k.bin"), "linerate")], got[(("client", "1k.bin"), "wrk")]
    out = [benchlib.Pair("client 1 KiB (wrk)", "responses/s", lr[0], wk[0], "client CPU us/response", lr[2], wk[2])]
    lr, wk = got[(("client", "512k.bin"), "linerate")], got[(("client", "512k.bin"), "wrk")]
    out.append(benchlib.Pair("client 512 KiB (wrk)", "Gbit/s", lr[1], wk[1], "client CPU s/Gbit", lr[2], wk[2]))
    lr, ng = got[(("server",), "linerate")], got[(("server",), "nginx")]
    out.append(benchlib.Pair("server 512 KiB (nginx)", "Gbit/s", lr[0], ng[0], "server %core per Gbit/s", lr[1], ng[1]))
    return out


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"# {nginx_version}; {wrk_version}; {args.seconds} s per run, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    res = {}
    ctx = setup(args)
    try:
        for key, tool, values in benchlib.rounds(args, run_round, ctx):
            res.setdefault(key + (tool,), []).append(values[:2])
    finally:
        teardown(ctx)
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    print()
    for name, what in (("1k.bin", 0), ("512k.bin", 1)):
        lr, wk = res[("client", name, "linerate")], res[("client", name, "wrk")]
        unit = "responses/s" if what == 0 else "Gbit/s"
        print(f"client {name:<9} linerate {med(lr, what):>12,.3f} {unit}  wrk {med(wk, what):>12,.3f}  ratio {med(lr, what) / med(wk, what):.3f}")
    lr, ng = res[("server", "linerate")], res[("server", "nginx")]
    print(f"server 512k.bin  linerate {med(lr, 0):.3f} Gbit/s, {med(lr, 1):.2f} %core/Gbit/s; "
          f"nginx {med(ng, 0):.3f} Gbit/s, {med(ng, 1):.2f} %core/Gbit/s; "
          f"throughput ratio {med(lr, 0) / med(ng, 0):.3f}, CPU per Gbit ratio {med(lr, 1) / med(ng, 1):.3f}")
    print("# medians; targets: client >= 1.0x wrk (both cases); server >= 1.0x nginx throughput at no more CPU per Gbit")
    if args.before:
        benchlib.print_before("wrk", res, [(f"client {n}", lambda tool, n=n: ("client", n, tool)) for n in ("1k.bin", "512k.bin")],
                              [("responses/s", 0, 1), ("Gbit/s", 1, 1)])
        benchlib.print_before("nginx", res, [("server 512k.bin", lambda tool: ("server", tool))],
                              [("Gbit/s", 0, 1), ("%core/Gbit/s", 1, 1)])


if __name__ == "__main__":
    main()
