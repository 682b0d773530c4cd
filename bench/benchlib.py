"""What every bench script does first: its own session, the peer tools, a release build."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINERATE = os.path.join(ROOT, "target", "release", "linerate")


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


def ensure_tools(commands, packages):
    """Installs the Debian `packages` when any of `commands` is missing."""
    if any(shutil.which(c) is None for c in commands):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq"] + list(packages), check=True)


def build_release():
    subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=ROOT, check=True)
