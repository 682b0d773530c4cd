#!/usr/bin/env python3
"""linerate tcp --zerocopy beside iperf3 -Z on loopback: one stream, 4 s runs, nine interleaved
rounds (issue 28). The runs, tables and checks are bench/tcp_vs_iperf3.py's with --zerocopy;
any of its options may follow, e.g. --zerocopy=msg for MSG_ZEROCOPY, --pin, --rounds 15:

    python3 bench/tcp_zerocopy_vs_iperf3.py [--zerocopy=sendfile|msg] [--rounds 9] [--seconds 4]

bench/all.py runs it as its own comparison (one stream, sendfile against iperf3 -Z).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tcp_vs_iperf3 import (  # noqa: E402  the same runs, with other defaults
    DEFAULT_SECONDS, NEEDS, PEER, pairs, run_round, runs_per_round, setup, teardown)

__all__ = ["DEFAULT_SECONDS", "NEEDS", "PEER", "pairs", "run_round", "runs_per_round", "setup", "teardown"]
EXTRA_DEFAULTS = {"streams": "1", "pin": False, "zerocopy": "sendfile", "length": None, "control": False}

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:]
    if not any(a.startswith("--zerocopy") for a in args):
        args = ["--zerocopy"] + args
    if not any(a.startswith("--streams") for a in args):
        args = ["--streams", "1"] + args
    os.execv(sys.executable, [sys.executable, os.path.join(here, "tcp_vs_iperf3.py")] + args)
