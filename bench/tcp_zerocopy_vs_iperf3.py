#!/usr/bin/env python3
"""linerate tcp --zerocopy beside iperf3 -Z on loopback: one stream, 4 s runs, nine interleaved
rounds (issue 28). The runs, tables and checks are bench/tcp_vs_iperf3.py's with --zerocopy;
any of its options may follow, e.g. --zerocopy=msg for MSG_ZEROCOPY, --pin, --rounds 15:

    python3 bench/tcp_zerocopy_vs_iperf3.py [--zerocopy=sendfile|msg] [--rounds 9] [--seconds 4]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
if not any(a.startswith("--zerocopy") for a in args):
    args = ["--zerocopy"] + args
if not any(a.startswith("--streams") for a in args):
    args = ["--streams", "1"] + args
os.execv(sys.executable, [sys.executable, os.path.join(here, "tcp_vs_iperf3.py")] + args)
