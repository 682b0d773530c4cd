#!/usr/bin/env python3
"""Every bench/ comparison against a peer tool in one run, interleaved, and one table of ratios.

Runs round 1 of every comparison, then round 2 of every one, and so on (each bench's own round:
its cases, linerate and the peer in the order the bench gives), and prints per case the ratio
linerate/peer of the work rate (Mbit/s, requests/s, round trips/s...: >= 1 favours linerate) and
of the CPU per unit of work (<= 1 favours linerate; "-" where the bench does not measure it),
each as the median of the rounds' ratios with their spread (lowest-highest). Run as root on a
quiet machine with a release build:

    python3 bench/all.py [--seconds 4] [--rounds 3] [--only NAME,...] [--json FILE]
    python3 bench/all.py --list        # the registered benches, their cases and peers; runs nothing
    python3 bench/all.py --dry-run     # what would run and how long it would take; runs nothing

After each round a control runs alone for the same seconds (benchlib.copy_probe, a copy loop on
one thread): its spread over the rounds, printed under the table, says how steady the machine
itself was while the benches ran.

--json FILE writes the table (medians, spreads, every round's ratios) as JSON, to compare a
change's before and after. It prints the expected duration first and stops (tearing down what
the benches set up) when a run takes twice that. It re-runs itself in a session of its own
(setsid) with a raised autogroup priority, installs the peer tools (Debian) when missing and
builds linerate (release) unless LINERATE_BIN names a binary. Sends traffic to 127.0.0.1 and
inside lab namespaces only.

A new bench/*_vs_*.py adds its module name to BENCHES below and exposes what the others do:
PEER, NEEDS, DEFAULT_SECONDS, runs_per_round(args), setup(args), run_round(args, rnd, ctx, log),
pairs(rows) and teardown(ctx); `--list` fails while a bench/*_vs_*.py is not registered.
"""
import argparse
import glob
import importlib
import json
import os
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

# The comparisons, in the order each round runs them.
BENCHES = [
    "tcp_vs_iperf3",
    "tcp_zerocopy_vs_iperf3",
    "tcp_streams_vs_iperf3",
    "udp_vs_iperf3",
    "rr_vs_sockperf",
    "http_vs_nginx_wrk",
    "https_vs_nginx_wrk_h2load",
    "h2_server_vs_nginx",
    "h2_client_vs_h2load",
    "iperf3_interop",
]
# Seconds a run takes beyond its --seconds: servers starting, the benches' pauses between runs.
RUN_OVERHEAD_S = 2.5


def unregistered():
    """bench/*_vs_*.py files that BENCHES does not name."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(here, "*_vs_*.py"))}
    return sorted(found - set(BENCHES))


def bench_args(module, seconds):
    """The arguments a bench's run_round takes: this run's seconds, no --before build, and the
    bench's own extra options at their defaults."""
    args = argparse.Namespace(seconds=seconds, rounds=1, before=None)
    for key, value in getattr(module, "EXTRA_DEFAULTS", {}).items():
        setattr(args, key, value)
    return args


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def table(per_round):
    """per_round: bench -> [[Pair] per round] -> the rows of the table, one per case."""
    rows = []
    for bench, rounds in per_round.items():
        for i, first in enumerate(rounds[0]):
            cases = [r[i] for r in rounds]
            rate = [p.linerate / p.peer if p.peer else float("nan") for p in cases]
            cpu = [p.linerate_cpu / p.peer_cpu for p in cases if p.linerate_cpu and p.peer_cpu]
            rows.append({
                "bench": bench,
                "case": first.case,
                "unit": first.unit,
                "linerate": statistics.median(p.linerate for p in cases),
                "peer": statistics.median(p.peer for p in cases),
                "ratio": spread(rate),
                "cpu_unit": first.cpu_unit,
                "cpu_ratio": spread(cpu) if cpu else None,
                "rounds": [p._asdict() for p in cases],
            })
    return rows


def print_table(rows):
    def fmt(s):
        return f"{s['median']:.3f} ({s['min']:.2f}-{s['max']:.2f})" if s else "-"

    print()
    print(f"{'bench':<26} {'case':<40} {'unit':<13} {'rate lr/peer':>20} {'CPU per unit lr/peer':>21}  CPU unit")
    for r in rows:
        print(f"{r['bench']:<26} {r['case']:<40} {r['unit']:<13} {fmt(r['ratio']):>20} {fmt(r['cpu_ratio']):>21}  "
              f"{r['cpu_unit'] or '-'}")
    print("# medians of the rounds' ratios (lowest-highest); rate >= 1 and CPU per unit <= 1 favour linerate")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=4, help="length of each run (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    benchlib.warmup_option(ap)
    ap.add_argument("--only", metavar="NAME,...", help="only these benches (names as --list prints them)")
    ap.add_argument("--json", metavar="FILE", help="also write the table as JSON to FILE")
    ap.add_argument("--list", action="store_true", help="list the registered benches and exit")
    ap.add_argument("--dry-run", action="store_true", help="print what would run and its duration, run nothing")
    args = benchlib.checked(ap)
    names = BENCHES
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BENCHES]
        if unknown:
            ap.error(f"--only: unknown bench {', '.join(unknown)} (registered: {', '.join(BENCHES)})")
    if args.rounds < 1 or args.seconds < 1:
        ap.error("--rounds and --seconds must be at least 1")
    modules = {n: importlib.import_module(n) for n in names}
    if args.list:
        missing = unregistered()
        for n, m in modules.items():
            print(f"{n:<26} peer {m.PEER:<14} runs/round {m.runs_per_round(bench_args(m, 1)):>3}  "
                  f"needs {' '.join(m.NEEDS[0])}")
        if missing:
            print(f"bench/all.py: not registered in BENCHES: {', '.join(missing)}", file=sys.stderr)
            sys.exit(1)
        return
    if not args.dry_run:
        # Re-runs this script in its own session first, so what follows prints once.
        benchlib.own_session()
    per_round_s = sum(m.runs_per_round(bench_args(m, args.seconds)) * (args.seconds + RUN_OVERHEAD_S)
                      for m in modules.values()) + args.seconds
    expected = per_round_s * (args.rounds + args.warmup)
    print(f"# {len(modules)} benches, {args.warmup} warm-up and {args.rounds} interleaved rounds of {args.seconds} s runs: "
          f"about {expected / 60:.0f} min ({per_round_s:.0f} s per round)", flush=True)
    if args.dry_run:
        for n, m in modules.items():
            print(f"#   {n}: {m.runs_per_round(bench_args(m, args.seconds))} runs per round against {m.PEER}")
        return
    for m in modules.values():
        benchlib.ensure_tools(*m.NEEDS)
    benchlib.build_release()
    print(f"# {benchlib.version(benchlib.LINERATE)}; {os.cpu_count()} CPUs", flush=True)

    # Bounded: a run that takes twice the estimate (plus setup) is stopped, and what the benches
    # set up is torn down on the way out.
    def too_long(_sig, _frame):
        raise TimeoutError(f"bench/all.py: over twice the expected {expected:.0f} s")

    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(int(2 * expected + 120))
    contexts = {}
    per_round = {n: [] for n in modules}
    control = []
    started = time.time()
    try:
        for n, m in modules.items():
            contexts[n] = m.setup(bench_args(m, args.seconds))
        # Warm-up rounds (numbered up to 0) run every bench once and are not counted.
        for rnd in range(1 - args.warmup, args.rounds + 1):
            for n, m in modules.items():
                t = time.time()
                rows = m.run_round(bench_args(m, args.seconds), rnd, contexts[n], log=benchlib.quiet)
                if rnd < 1:
                    print(f"round {rnd} {n} ({time.time() - t:.0f} s): warm-up, not counted", flush=True)
                    continue
                pairs = m.pairs(rows)
                per_round[n].append(pairs)
                summary = "; ".join(f"{p.case} {p.linerate / p.peer:.3f}" for p in pairs)
                print(f"round {rnd} {n} ({time.time() - t:.0f} s): {summary}", flush=True)
            if rnd < 1:
                continue
            control.append(benchlib.copy_probe(args.seconds))
            print(f"round {rnd} control: a copy loop alone, {control[-1]:.2f} GB/s", flush=True)
    finally:
        signal.alarm(0)
        for n, ctx in contexts.items():
            modules[n].teardown(ctx)
    rows = table(per_round)
    print_table(rows)
    steady = spread(control)
    print(f"# control, a copy loop alone after each round: median {steady['median']:.2f} GB/s, lowest "
          f"{100 * (1 - steady['min'] / steady['median']):.1f} % below it, highest "
          f"{100 * (steady['max'] / steady['median'] - 1):.1f} % above (the machine's own spread)")
    print(f"# took {(time.time() - started) / 60:.1f} min")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": args.seconds, "rounds": args.rounds, "version": benchlib.version(benchlib.LINERATE),
                       "rows": rows, "control_gbytes_per_second": control}, f, indent=1)


if __name__ == "__main__":
    main()
