#!/usr/bin/env bash
# The lab's user-space link relay: delay accuracy (ping) and throughput ceiling (TCP), with and
# without segmentation offload, on this machine. Run as root on a quiet machine:
#   bash bench/lab_relay.sh
# It re-runs itself in its own session with a raised autogroup priority. Traffic stays inside
# the lab's namespaces.
set -euo pipefail
if [ "${LINERATE_BENCH_SESSION:-}" != 1 ]; then
    LINERATE_BENCH_SESSION=1 exec setsid --wait bash "$0" "$@"
fi
echo -10 > /proc/self/autogroup 2>/dev/null || true
cd "$(dirname "$0")/.."
command -v ping >/dev/null || { apt-get update -qq && apt-get install -y -qq iputils-ping >/dev/null; }
cargo build --release --locked -q
L=./target/release/linerate
LAB=benchrelay
$L lab down --name $LAB >/dev/null
trap '$L lab down --name $LAB >/dev/null' EXIT

rtt_stats() { # ping output on stdin -> "median p99 max" of (rtt - expected) in ms
    python3 -c '
import sys, statistics
want = float(sys.argv[1])
r = [float(l.split("time=")[1].split()[0]) for l in sys.stdin if "time=" in l][1:]
r.sort()
err = [x - want for x in r]
print(f"n={len(r)} median error {statistics.median(err):+.3f} ms, p99 error {err[int(len(err)*0.99)-1]:+.3f} ms, max {err[-1]:+.3f} ms, min {err[0]:+.3f} ms")
' "$1"
}
tput() { python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f Mbit/s received" % (d["summary"]["received"]["bits_per_second"] / 1e6))'; }

$L lab up --name $LAB --link delay=10ms >/dev/null
echo "# delay=10ms each way (20 ms RTT), idle link, 500 pings 10 ms apart:"
$L lab exec --name $LAB h1 -- ping -n -c 500 -i 0.01 h2 | rtt_stats 20
echo "# the same while linerate tcp runs between the hosts:"
$L lab exec --name $LAB h2 -- linerate tcp h1 -t 8 -i 0 --json > /tmp/relay-bg.json &
sleep 1
$L lab exec --name $LAB h1 -- ping -n -c 500 -i 0.01 h2 | rtt_stats 20
wait
echo "# (tcp meanwhile: $(tput < /tmp/relay-bg.json))"
$L lab down --name $LAB >/dev/null

$L lab up --name $LAB --link delay=1ms >/dev/null
for p in 1 4; do
    echo "# throughput through the relay, delay=1ms, offload on, -P $p: $($L lab exec --name $LAB h1 -- linerate tcp h2 -t 8 --warmup 2 -P $p -i 0 --json | tput)"
done
ip -n $LAB-h1 link set eth0 gso_max_segs 1
ip -n $LAB-h2 link set eth0 gso_max_segs 1
for p in 1 4; do
    echo "# throughput through the relay, delay=1ms, one 1500-byte frame per packet, -P $p: $($L lab exec --name $LAB h1 -- linerate tcp h2 -t 8 --warmup 2 -P $p -i 0 --json | tput)"
done
$L lab status --name $LAB | tail -3
