#!/usr/bin/env python3
"""What latency probes cost a full-speed test: `linerate tcp` on loopback for the same seconds
without probes and with `--probe rr --probe-rate 100` (TCP round trips to the agent on a
connection of their own, beside the load), in interleaved rounds (the order alternates), against
one agent. Prints each round's two throughputs (the receivers' bits/s over the window), the
medians and the ratio with/without; the target is a cost of at most 2 %.

    python3 bench/probe_cost.py [--seconds 5] [--rounds 3]

Runs in a session of its own (setsid) with a raised autogroup priority, builds linerate
(release) unless LINERATE_BIN names a binary, and sends traffic to 127.0.0.1 only. The probed
run also probes 1 s before and 1 s after its load (--probe-idle 1 --probe-recovery 1): the
throughput compared is the load's own.
"""
import argparse
import statistics
import sys

import benchlib

LINERATE = benchlib.LINERATE
WITHOUT = []
WITH = ["--probe", "rr", "--probe-rate", "100", "--probe-idle", "1", "--probe-recovery", "1"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    benchlib.own_session()
    benchlib.build_release()
    port = benchlib.free_port()
    agent = benchlib.start_server([LINERATE, "serve", "--bind", "127.0.0.1", "--port", str(port)], port)
    rates = {"without": [], "with": []}
    try:
        for rnd in range(benchlib.WARMUP_ROUNDS + a.rounds):
            runs = [("without", WITHOUT), ("with", WITH)]
            for name, extra in runs if rnd % 2 else runs[::-1]:
                cmd = [LINERATE, "tcp", "--json", "--no-store", f"127.0.0.1:{port}", "-t", str(a.seconds)]
                doc = benchlib.run_json(cmd + extra, a.seconds + 60)
                if name == "with" and not doc.get("latency"):
                    sys.exit("the probed run has no latency block")
                bits = doc["summary"]["received"]["bits_per_second"]
                counted = rnd >= benchlib.WARMUP_ROUNDS
                if counted:
                    rates[name].append(bits)
                note = "" if counted else " (warm-up, not counted)"
                extra_text = ""
                if name == "with":
                    lat = doc["latency"]
                    extra_text = f"  probes idle {lat['idle_ms']:.3f} ms, loaded {lat['loaded_ms']:.3f} ms"
                print(f"round {rnd + 1 - benchlib.WARMUP_ROUNDS}: {name:8} {bits / 1e9:7.2f} Gbit/s{extra_text}{note}",
                      flush=True)
    finally:
        benchlib.stop_server(agent)
    without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
    # Each round's two runs are neighbours in time: the median of their ratios (as bench/all.py
    # gives) is steadier on a busy machine than the ratio of the medians, printed beside it.
    ratios = [w / o for w, o in zip(rates["with"], rates["without"])]
    ratio = statistics.median(ratios)
    print(f"median without probes: {without / 1e9:.2f} Gbit/s; with --probe rr --probe-rate 100: "
          f"{with_ / 1e9:.2f} Gbit/s (ratio of the medians {with_ / without:.3f})")
    print(f"ratio with/without, median of the rounds: {ratio:.3f} (spread {min(ratios):.3f}-{max(ratios):.3f})")
    print("target: at most 2 % lower:", "met" if ratio >= 0.98 else "NOT met")


if __name__ == "__main__":
    main()
