#!/usr/bin/env python3
"""rustls's crypto providers compared: linerate built with ring and with aws-lc-rs (issue 27).

Each build serves `serve --https-port` and drives it with its own client (so both ends use the
provider), on loopback, in interleaved rounds:
  full handshakes/s: linerate http https://.../bytes/1024 --users 32 --tls-resume off (a new
    connection and a full TLS 1.3 handshake per request), with the client's CPU per handshake;
  bulk, 1 KiB: --users 32 --keepalive, responses/s;
  bulk, 512 KiB: --users 8 --keepalive, Gbit/s read.

Build the two binaries first (the second with the feature), then:

    cargo build --release && cp target/release/linerate /tmp/linerate-aws-lc
    cargo build --release --features linerate-core/tls-ring && cp target/release/linerate /tmp/linerate-ring
    python3 bench/tls_providers.py --ring /tmp/linerate-ring --aws-lc /tmp/linerate-aws-lc [--seconds 4] [--rounds 3]

Re-runs itself under setsid with a raised autogroup priority; 127.0.0.1 only.
"""
import statistics
import subprocess
import time

import benchlib

CASES = (
    ("full handshakes/s", "/bytes/1024", ["--users", "32", "--tls-resume", "off"]),
    ("1 KiB keep-alive responses/s", "/bytes/1024", ["--users", "32", "--keepalive"]),
    ("512 KiB keep-alive Gbit/s", "/bytes/524288", ["--users", "8", "--keepalive"]),
)


def figure(case, s):
    if case.startswith("full"):
        return s["tls"]["full_per_second"], s["tls"]["cpu_us_per_full_handshake"]
    if case.startswith("1 KiB"):
        return s["responses_per_second"], None
    return s["bits_per_second_in"] / 1e9, None


def main():
    args = benchlib.arguments(__doc__, 4, lambda ap: (ap.add_argument("--ring", required=True),
                                                      ap.add_argument("--aws-lc", required=True)))
    benchlib.own_session()
    builds = [("ring", args.ring), ("aws-lc-rs", args.aws_lc)]
    res = {}
    # Warm-up rounds are numbered up to 0 and not counted (benchlib.WARMUP_ROUNDS).
    for rnd in range(1 - args.warmup, args.rounds + 1):
        for case, path, extra in CASES:
            for name, binary in (builds if rnd % 2 else builds[::-1]):
                port = benchlib.free_port()
                srv = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1", "--port", str(benchlib.free_port()),
                                        "--https-port", str(port)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    benchlib.wait_port(port)
                    s = benchlib.run_json([binary, "http", f"https://127.0.0.1:{port}{path}", "-d", f"{args.seconds}s",
                                           "--insecure", "--tls-version", "1.3", "-i", "0", "--no-agent", "--json"]
                                          + extra, args.seconds + 60)["summary"]
                finally:
                    srv.kill()
                    srv.wait()
                value, cpu = figure(case, s)
                if rnd > 0:
                    res.setdefault((case, name), []).append((value, cpu))
                note = f"  client CPU {cpu:.0f} us/handshake" if cpu else ""
                print(f"{rnd:>3} {case:<30} {name:<10} {value:>12,.3f}{note}  errors {s['errors']['total']}", flush=True)
                time.sleep(0.3)
    print()
    for case, _, _ in CASES:
        r = statistics.median(v for v, _ in res[(case, "ring")])
        a = statistics.median(v for v, _ in res[(case, "aws-lc-rs")])
        line = f"{case:<30} ring {r:>12,.3f}  aws-lc-rs {a:>12,.3f}  ring/aws-lc-rs {r / a:.3f}"
        if case.startswith("full"):
            rc = statistics.median(c for _, c in res[(case, "ring")])
            ac = statistics.median(c for _, c in res[(case, "aws-lc-rs")])
            line += f"  client CPU us/handshake ring {rc:.0f}, aws-lc-rs {ac:.0f}"
        print(line)
    print("# medians of interleaved rounds; the machine is shared, so single rounds move")


if __name__ == "__main__":
    main()
