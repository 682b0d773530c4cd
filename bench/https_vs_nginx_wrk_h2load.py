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
import statistics
import subprocess
import time

import benchlib
from http_vs_nginx_wrk import nginx_serving, teardown, wrk  # noqa: F401 (teardown: this bench's)


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
    return ok / secs, secs, ("" if ok == n else f"{n - ok} failed")


def linerate_https(binary, url, users, seconds, extra):
    s = benchlib.run_json([binary, "http", url, "--users", str(users), "-d", f"{seconds}s", "--insecure",
                           "--tls-version", "1.3", "-i", "0", "--no-agent", "--json"] + extra, seconds + 60)["summary"]
    return s, s["errors"]["total"]


PEER = "wrk, h2load"
NEEDS = (["nginx", "wrk", "h2load", "openssl"], ["nginx-light", "wrk", "nghttp2-client", "openssl"])
DEFAULT_SECONDS = 5


def runs_per_round(args):
    return 2 * (2 + bool(args.before))


def setup(args):
    """The file served and nginx with TLS serving it (stopped by teardown)."""
    return nginx_serving({"1k.bin": 1024}, tls=True)


def run_round(args, rnd, ctx, log=print):
    """One round: keep-alive (wrk and linerate), then full handshakes (h2load and linerate).
    Returns rows (case, tool, (per second, client CPU us per unit)): responses for keep-alive,
    full handshakes for the other."""
    rows = []
    builds = benchlib.binaries(args)
    url = ctx["nginx"].url("1k.bin")
    runs = builds[:1] + [("wrk", None)] + builds[1:]
    for tool, binary in benchlib.round_order(args, rnd, runs):
        before = benchlib.children_cpu_seconds()
        if tool == "wrk":
            rps, err = wrk(url, 64, args.seconds)
        else:
            s, nerr = linerate_https(binary, url, 64, args.seconds, ["--keepalive"])
            rps, err = s["responses_per_second"], (f"errors {nerr}" if nerr else "")
        cpu_us = (benchlib.children_cpu_seconds() - before) * 1e6 / max(rps * args.seconds, 1)
        rows.append(("keepalive", tool, (rps, cpu_us)))
        log(f"{rnd:>3} keep-alive 1 KiB 64 users {tool:<9} {rps:>12,.0f} responses/s {cpu_us:>6.1f} us client CPU/response "
            f"{err}", flush=True)
        time.sleep(0.5)
    runs = builds[:1] + [("h2load", None)] + builds[1:]
    for tool, binary in benchlib.round_order(args, rnd, runs):
        before = benchlib.children_cpu_seconds()
        if tool == "h2load":
            hs, secs, err = h2load_handshakes(url, 1000 * args.seconds)
        else:
            s, nerr = linerate_https(binary, url, 64, args.seconds, ["--tls-resume", "off"])
            hs, secs, err = s["tls"]["full_per_second"], args.seconds, (f"errors {nerr}" if nerr else "")
        cpu_us = (benchlib.children_cpu_seconds() - before) * 1e6 / max(hs * secs, 1)
        rows.append(("handshakes", tool, (hs, cpu_us)))
        log(f"{rnd:>3} full handshakes        {tool:<9} {hs:>12,.0f} per second {cpu_us:>6.1f} us client CPU/handshake "
            f"{err}", flush=True)
        time.sleep(0.5)
    return rows


def pairs(rows):
    """One round's rows as linerate/peer pairs: keep-alive responses/s against wrk, full
    handshakes/s against h2load, each with the client process's CPU per unit."""
    got = {(k, tool): v for k, tool, v in rows}
    lr, wk = got[("keepalive", "linerate")], got[("keepalive", "wrk")]
    lh, hl = got[("handshakes", "linerate")], got[("handshakes", "h2load")]
    return [benchlib.Pair("HTTPS/1.1 keep-alive 1 KiB (wrk)", "responses/s", lr[0], wk[0], "client CPU us/response",
                          lr[1], wk[1]),
            benchlib.Pair("full TLS handshakes (h2load)", "handshakes/s", lh[0], hl[0], "client CPU us/handshake",
                          lh[1], hl[1])]


def main():
    args = benchlib.arguments(__doc__, DEFAULT_SECONDS)
    benchlib.prepare(args, *NEEDS)
    nginx_version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    h2_version = subprocess.run(["h2load", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {nginx_version}; {wrk_version}; {h2_version}; {args.seconds} s per run, {args.rounds} interleaved rounds, "
          f"{os.cpu_count()} CPUs")
    benchlib.print_builds(args)
    res = benchlib.collect(args, setup, run_round, teardown, pick=lambda values: values[0])
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
