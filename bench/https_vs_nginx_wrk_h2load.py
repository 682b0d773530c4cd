#!/usr/bin/env python3
"""linerate http over TLS beside wrk and h2load, against nginx with TLS, on loopback (issue 27).

Cases (the same nginx, TLS 1.3, ECDSA P-256 certificate, interleaved rounds):
  HTTPS/1.1 keep-alive, 1 KiB objects, 64 users: responses/s,
    linerate http https://... --users 64 --keepalive vs wrk -t 2 -c 64;
  new full TLS handshakes per second, one request per connection:
    linerate http https://... --users 64 --tls-resume off (a new connection per request) vs
    h2load --h1 -c N -n N --rate 200 --rate-period 50ms (each client one connection and one
    request, offered 4,000 connections per second).

Run as root on a quiet machine:

    python3 bench/https_vs_nginx_wrk_h2load.py [--seconds 5] [--rounds 3] [--before PATH]

Re-runs itself in a session of its own (setsid) with a raised autogroup priority. Installs nginx,
wrk and h2load (Debian) when missing; makes the certificate with openssl and writes nginx's config
in a temporary directory. Sends traffic to 127.0.0.1 only.
"""
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

import benchlib
from http_vs_nginx_wrk import Nginx, wrk


def h2load_handshakes(url, n):
    """h2load --h1 in its rate mode with as many clients as requests: each client makes one
    connection, one full handshake (h2load resumes no session) and one request; clients start at
    an offered 4,000 per second (200 every 50 ms), above what either tool reaches here, so the
    figure is what nginx and h2load complete (req/s over the run) with the connections in flight
    as many as that takes."""
    out = subprocess.run(["h2load", "--h1", "-t", "2", "-c", str(n), "-n", str(n), "-m", "1",
                          "--rate", "200", "--rate-period", "50ms", url],
                         capture_output=True, text=True, timeout=600).stdout
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    secs = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    ok = int(re.search(r"(\d+) succeeded", out).group(1))
    return ok / secs, ("" if ok == n else f"{n - ok} failed")


def linerate_https(binary, url, users, seconds, extra):
    s = benchlib.run_json([binary, "http", url, "--users", str(users), "-d", f"{seconds}s", "--insecure",
                           "--tls-version", "1.3", "-i", "0", "--no-agent", "--json"] + extra, seconds + 60)["summary"]
    return s, s["errors"]["total"]


def main():
    args = benchlib.arguments(__doc__, 5)
    benchlib.prepare(args, ["nginx", "wrk", "h2load", "openssl"], ["nginx-light", "wrk", "nghttp2-client", "openssl"])
    root = tempfile.mkdtemp(prefix="lrbench-www-")
    os.chmod(root, 0o755)
    with open(os.path.join(root, "1k.bin"), "wb") as f:
        f.write(os.urandom(1024))
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    h2_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {nginx_version}; {wrk_version}; {h2_version}; {args.seconds} s per run, {args.rounds} interleaved rounds, "
          f"{os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    builds = benchlib.binaries(args)
    res = {}
    nginx = Nginx(root, tls=True)
    url = nginx.url("1k.bin")
    try:
        for rnd in range(1, args.rounds + 1):
            runs = builds[:1] + [("wrk", None)] + builds[1:]
            for tool, binary in benchlib.round_order(args, rnd, runs):
                if tool == "wrk":
                    rps, err = wrk(url, 64, args.seconds)
                else:
                    s, nerr = linerate_https(binary, url, 64, args.seconds, ["--keepalive"])
                    rps, err = s["responses_per_second"], (f"errors {nerr}" if nerr else "")
                res.setdefault(("keepalive", tool), []).append(rps)
                print(f"{rnd:>3} keep-alive 1 KiB 64 users {tool:<9} {rps:>12,.0f} responses/s {err}", flush=True)
                time.sleep(0.5)
            runs = builds[:1] + [("h2load", None)] + builds[1:]
            for tool, binary in benchlib.round_order(args, rnd, runs):
                if tool == "h2load":
                    hs, err = h2load_handshakes(url, 1000 * args.seconds)
                    cpu = ""
                else:
                    s, nerr = linerate_https(binary, url, 64, args.seconds, ["--tls-resume", "off"])
                    hs, err = s["tls"]["full_per_second"], (f"errors {nerr}" if nerr else "")
                    cpu = f"client CPU {s['tls']['cpu_us_per_full_handshake']:.0f} us/handshake"
                res.setdefault(("handshakes", tool), []).append(hs)
                print(f"{rnd:>3} full handshakes        {tool:<9} {hs:>12,.0f} per second {cpu} {err}", flush=True)
                time.sleep(0.5)
    finally:
        nginx.stop()
        shutil.rmtree(root, ignore_errors=True)
    print()
    for case, peer, unit in (("keepalive", "wrk", "responses/s"), ("handshakes", "h2load", "full handshakes/s")):
        lr, pr = statistics.median(res[(case, "linerate")]), statistics.median(res[(case, peer)])
        line = f"{case:<10} linerate {lr:>12,.1f} {unit}  {peer} {pr:>12,.1f}  ratio {lr / pr:.3f}"
        if args.before:
            b = statistics.median(res[(case, "before")])
            line += f"  before {b:,.1f} (after/before {lr / b:.3f})"
        print(line)
    print("# medians; targets (issue 27): >= 1.0x wrk (keep-alive), >= 1.0x h2load (full handshakes)")


if __name__ == "__main__":
    main()
