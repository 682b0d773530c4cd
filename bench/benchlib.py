"""What every bench script shares: its own session, the peer tools, a release build, servers
started and read off the kernel, and the `--before PATH` comparison of two linerate builds."""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# LINERATE_BIN names a linerate binary built elsewhere: the scripts then use it and build nothing.
LINERATE = os.environ.get("LINERATE_BIN") or os.path.join(ROOT, "target", "release", "linerate")
TICK = os.sysconf("SC_CLK_TCK")
# Rounds run before the counted ones: the first runs of a bench are more often slow here than
# chance gives (over 18 series of one-stream rounds on 2026-11-27, the first was the slowest 4
# times and second slowest 3; docs/benchmarks.md, "Fifth look").
WARMUP_ROUNDS = 1


def own_session():
    """Re-runs the calling script under setsid with a raised autogroup priority: on these
    machines plain `nice` does not win against other sessions' load."""
    if os.environ.get("LINERATE_BENCH_SESSION") != "1":
        env = dict(os.environ, LINERATE_BENCH_SESSION="1")
        os.execvpe("setsid", ["setsid", "--wait", sys.executable] + sys.argv, env)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("-10")
    except OSError as e:
        print(f"note: could not raise autogroup priority: {e}", file=sys.stderr)


def copy_probe(seconds, length=128 << 10, ring=16 << 20):
    """The machine's own steadiness, for a bench's control rounds: GB/s one thread copies in
    `seconds`, `length` bytes at a time from a hot buffer into a `ring` and back out (a loopback
    stream's two copies, without the kernel). Run alone between the tools' runs; where its
    slowest round falls well below its median, the machine itself is not steady."""
    src = bytes(range(256)) * (length // 256)
    view, out = memoryview(bytearray(ring)), memoryview(bytearray(length))
    copied, off, start = 0, 0, time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        for _ in range(64):
            view[off:off + length] = src
            out[:] = view[off:off + length]
            off = (off + length) % ring
        copied += 64 * length
    return copied / (now - start) / 1e9


def ensure_tools(commands, packages):
    """Installs the Debian `packages` when any of `commands` is missing."""
    if any(shutil.which(c) is None for c in commands):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq"] + list(packages), check=True)


def build_release():
    if os.environ.get("LINERATE_BIN"):
        return
    subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)


def arguments(doc, seconds, extra=None):
    """Parses the options every comparison takes (`--seconds`, `--rounds`, `--before`), plus
    what `extra(parser)` adds."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=seconds, help="length of each run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    warmup_option(ap)
    ap.add_argument("--before", metavar="PATH",
                    help="a second linerate binary (e.g. the build before a change): each round runs the "
                         "peer tool, this build, then PATH, and the medians are compared after/before")
    if extra:
        extra(ap)
    return checked(ap)


def warmup_option(ap):
    """`--warmup ROUNDS`, for every bench's parser; `checked` refuses a negative count."""
    ap.add_argument("--warmup", type=int, default=WARMUP_ROUNDS, metavar="ROUNDS",
                    help=f"rounds run first and not counted (default {WARMUP_ROUNDS})")


def checked(ap):
    """`ap`'s arguments, with `--warmup` checked."""
    args = ap.parse_args()
    if args.warmup < 0:
        ap.error("--warmup: at least 0 rounds")
    return args


def rounds(args, run_round, ctx):
    """Every counted row of a run: `args.warmup` rounds first, run and shown as round 0 but not
    counted, then rounds 1 to `args.rounds`, each `run_round(args, rnd, ctx)`'s rows."""
    if args.warmup:
        print(f"# round 0: {args.warmup} warm-up round{'s' if args.warmup > 1 else ''}, shown, not counted", flush=True)
    for _ in range(args.warmup):
        for _row in run_round(args, 0, ctx):
            pass
    for rnd in range(1, args.rounds + 1):
        yield from run_round(args, rnd, ctx)


def collect(args, setup, run_round, teardown, pick=lambda values: values, then=None):
    """Every counted round's values, `pick`ed, by (key, tool) in round order: the context from
    `setup(args)`, the rounds (`rounds`), then `then(ctx)` while the context still stands (a
    bench's extra runs); `teardown(ctx)` whatever happens."""
    res = {}
    ctx = setup(args)
    try:
        for key, tool, values in rounds(args, run_round, ctx):
            res.setdefault((key, tool), []).append(pick(values))
        if then:
            then(ctx)
    finally:
        teardown(ctx)
    return res


def prepare(args, commands, packages):
    """Enters the bench's own session, installs the peer tools when missing and builds linerate."""
    own_session()
    ensure_tools(commands, packages)
    build_release()
    if args.before and not os.access(args.before, os.X_OK):
        raise SystemExit(f"--before {args.before}: not an executable file")


def binaries(args):
    """The linerate builds a run compares: this tree's, and `--before`'s when given."""
    return [("linerate", LINERATE)] + ([("before", os.path.abspath(args.before))] if args.before else [])


def round_order(args, rnd, runs):
    """The runs of round `rnd`, each a tuple that starts with its tool's name ("linerate" for
    this build, "before" for --before's). Without a before build the order alternates from round
    to round, as it always did; with one, every round runs the peer first, then this build, then
    the before build."""
    if args.before:
        return sorted(runs, key=lambda run: {"linerate": 1, "before": 2}.get(run[0], 0))
    return runs if rnd % 2 else runs[::-1]


def version(binary):
    return subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()


def print_builds(args):
    """A comment line naming the before build, when there is one."""
    if args.before:
        print(f"# before: {args.before} ({version(args.before)}); after: {LINERATE} ({version(LINERATE)})")


def h2load_figures(out, url):
    """h2load's report read: (requests/s, requests succeeded, a note on failures); exits when it
    did not speak h2."""
    if "Application protocol: h2" not in out:
        raise SystemExit(f"h2load did not speak h2 to {url}:\n{out}")
    rps = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out).group(1))
    ok = int(re.search(r"(\d+) succeeded", out).group(1))
    failed = int(re.search(r"(\d+) failed", out).group(1)) + int(re.search(r"(\d+) errored", out).group(1))
    return rps, ok, (f"{failed} failed" if failed else "")


def www_root(files):
    """A temporary document root readable by nginx's workers, holding `files` ({name: bytes
    long}) of random bytes; the caller removes it."""
    root = tempfile.mkdtemp(prefix="lrbench-www-")
    os.chmod(root, 0o755)
    for name, size in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(os.urandom(size))
    return root


def free_port():
    """A TCP port of 127.0.0.1 free now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port):
    """Waits (up to 10 s) until something accepts connections on 127.0.0.1:PORT."""
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def proc_cpu_seconds(pid):
    """User + system CPU seconds of a process so far (proc(5) stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 (1-based) of proc(5); after the ")" they are 12 and 13.
    return (int(fields[11]) + int(fields[12])) / TICK


def listening(port, pid="self"):
    """True when something listens on TCP `port` in the network namespace of process `pid`
    (from /proc/PID/net/tcp{,6}; state 0A = LISTEN)."""
    for table in (f"/proc/{pid}/net/tcp", f"/proc/{pid}/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    local, state = line.split()[1], line.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def start_server(cmd, port):
    """Starts a server and returns once it listens on TCP `port`, in whatever network namespace
    it runs (`ip netns exec` execs the command, so the process is the server itself)."""
    # Servers' stdout is block-buffered into a pipe, so readiness is read off the kernel instead.
    srv = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        if listening(port, srv.pid):
            return srv
        time.sleep(0.05)
    srv.kill()
    raise SystemExit(f"{cmd[0]} server did not start")


def run_json(cmd, limit):
    """Runs a client to its end and returns the JSON document it printed."""
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def children_cpu_seconds():
    """User + system CPU seconds of this script's waited-for children so far (os.times): the
    difference across a subprocess.run is that client's CPU."""
    t = os.times()
    return t.children_user + t.children_system


def run_json_cpu(cmd, limit):
    """Runs a client to its end: the JSON document it printed and its CPU seconds."""
    before = children_cpu_seconds()
    doc = run_json(cmd, limit)
    return doc, children_cpu_seconds() - before


def stop_server(srv):
    """Kills a server started by start_server and returns its CPU seconds, read just before."""
    try:
        cpu = proc_cpu_seconds(srv.pid)
    except OSError:
        cpu = None
    srv.kill()
    srv.wait()
    return cpu


class Pair(NamedTuple):
    """One comparison's figures from one round, linerate beside its peer, for bench/all.py: the
    work rate (`unit`, e.g. Mbit/s, requests/s; higher is better) and the CPU per unit of work
    (`cpu_unit`; lower is better; None where the bench does not measure it). A bench's
    `pairs(rows)` turns the rows of one `run_round` into these."""
    case: str
    unit: str
    linerate: float
    peer: float
    cpu_unit: Optional[str] = None
    linerate_cpu: Optional[float] = None
    peer_cpu: Optional[float] = None


def quiet(*_args, **_kwargs):
    """A `log` for run_round that prints nothing (bench/all.py prints only its table)."""


def print_before(peer, rows, cases, metrics):
    """The before/after table. `cases` are (label, key): `key(tool)` finds a case's result rows
    in `rows` for the tool (peer, "linerate", "before"); `metrics` are (name, column, divisor).
    Prints the medians, each build's ratio to the peer, and after/before."""
    print()
    print(f"# before/after: medians; ratios are linerate/{peer} for each build, and after/before")
    print(f"{'case':<24} {'metric':<14} {peer:>14} {'after':>14} {'ratio':>7} {'before':>14} {'ratio':>7} "
          f"{'after/before':>12}")
    for label, key in cases:
        for metric, i, scale in metrics:
            mp, ma, mb = (statistics.median(x[i] / scale for x in rows[key(tool)])
                          for tool in (peer, "linerate", "before"))
            print(f"{label:<24} {metric:<14} {number(mp):>14} {number(ma):>14} {ma / mp:>7.3f} {number(mb):>14} "
                  f"{mb / mp:>7.3f} {ma / mb:>12.3f}")


def number(v):
    """A median for the before/after table: whole from 10,000 up, one decimal from 100, else four."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4f}"
