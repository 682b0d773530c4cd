#!/usr/bin/env python3
"""How fast `linerate results` answers over a large store (issue 15: 10,000 results in well
under a second).

One real run is stored through the binary's own path (an agent on 127.0.0.1, `linerate tcp -t 1
--db DB`); the script then copies that record with Python's sqlite3 into the same tables until
the store holds --records results (start times a minute apart, labels varied), so every row is a
real document with real headline figures. It then times, over --rounds interleaved rounds, the
wall time of:

  linerate results                      the newest 20 (the default)
  linerate results --limit 0            every row
  linerate results --label nic=b        a label selection (half the rows), newest 20
  linerate results --kind tcp --since 30d --limit 0
  linerate results show ID              one stored report rendered again
  linerate results show ID --json       one stored document printed again
  linerate results export ID            one stored document with its row

and prints a Markdown table of the medians (docs/benchmarks.md). The database is removed at the
end unless --keep.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def store_one_real_run(binary, db):
    agent = subprocess.Popen(
        [binary, "serve", "--bind", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = agent.stdout.readline()
        addr = next(w for w in line.split() if w[:1].isdigit() and ":" in w)
        out = subprocess.run(
            [binary, "tcp", addr, "-t", "1", "-i", "0", "--db", db, "--label", "nic=a"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        last = out.stdout.strip().splitlines()[-1]
        assert last.startswith("stored as #"), last
        return int(last[len("stored as #"):])
    finally:
        agent.kill()
        agent.wait()


def fill(db, record_id, total):
    """Copies record `record_id` until the store holds `total` records."""
    con = sqlite3.connect(db)
    cur = con.cursor()
    cols = [c[1] for c in cur.execute("PRAGMA table_info(records)") if c[1] != "id"]
    row = cur.execute(f"SELECT {', '.join(cols)} FROM records WHERE id = ?", (record_id,)).fetchone()
    doc_cols = [c[1] for c in cur.execute("PRAGMA table_info(documents)") if c[1] != "record_id"]
    doc_row = cur.execute(
        f"SELECT {', '.join(doc_cols)} FROM documents WHERE record_id = ?", (record_id,)
    ).fetchone()
    doc = doc_row[doc_cols.index("json")]
    figures = cur.execute(
        "SELECT position, name, unit, value FROM figures WHERE record_id = ?", (record_id,)
    ).fetchall()
    started = dict(zip(cols, row))["started_unix_ms"]
    have = cur.execute("SELECT count(*) FROM records").fetchone()[0]
    place = ", ".join("?" for _ in cols)
    cur.execute("BEGIN")
    for i in range(total - have):
        values = dict(zip(cols, row))
        values["started_unix_ms"] = started - (i + 1) * 60_000
        cur.execute(f"INSERT INTO records ({', '.join(cols)}) VALUES ({place})", [values[c] for c in cols])
        rid = cur.lastrowid
        cur.execute(
            f"INSERT INTO documents (record_id, {', '.join(doc_cols)}) VALUES (?, {', '.join('?' for _ in doc_cols)})",
            (rid, *doc_row),
        )
        cur.executemany(
            "INSERT INTO figures (record_id, position, name, unit, value) VALUES (?, ?, ?, ?, ?)",
            [(rid, *f) for f in figures],
        )
        cur.executemany(
            "INSERT INTO labels (record_id, key, value) VALUES (?, ?, ?)",
            [(rid, "nic", "ab"[i % 2]), (rid, "run", str(i))],
        )
    con.commit()
    con.close()
    return len(doc)


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--binary", default=None, help="linerate to time (default: a release build)")
    p.add_argument("--keep", action="store_true", help="keep the filled database")
    args = p.parse_args()
    benchlib.own_session()
    binary = args.binary
    if binary is None:
        benchlib.build_release()
        binary = benchlib.LINERATE
    tmp = tempfile.mkdtemp(prefix="linerate-store-bench-")
    db = os.path.join(tmp, "results.db")
    rid = store_one_real_run(binary, db)
    t = time.perf_counter()
    doc_bytes = fill(db, rid, args.records)
    fill_s = time.perf_counter() - t
    size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
    print(f"{args.records} records, document {doc_bytes} bytes stored each, database {size / 2**20:.0f} MiB "
          f"(filled in {fill_s:.1f} s)", file=sys.stderr)
    cases = [
        ("results (newest 20)", [binary, "results", "--db", db]),
        ("results --limit 0 (every row)", [binary, "results", "--db", db, "--limit", "0"]),
        ("results --label nic=b", [binary, "results", "--db", db, "--label", "nic=b"]),
        ("results --kind tcp --since 30d --limit 0",
         [binary, "results", "--db", db, "--kind", "tcp", "--since", "30d", "--limit", "0"]),
        ("results --json --limit 0", [binary, "results", "--db", db, "--json", "--limit", "0"]),
        (f"results show {rid}", [binary, "results", "--db", db, "show", str(rid)]),
        (f"results show {rid} --json", [binary, "results", "--db", db, "show", str(rid), "--json"]),
        (f"results export {rid}", [binary, "results", "--db", db, "export", str(rid)]),
    ]
    times = {name: [] for name, _ in cases}
    for _ in range(args.rounds):
        for name, cmd in cases:
            times[name].append(timed(cmd))
    print(f"| command ({args.records:,} stored) | median s | min s | max s |")
    print("| --- | ---: | ---: | ---: |")
    for name, _ in cases:
        v = times[name]
        print(f"| `linerate {name}` | {statistics.median(v):.3f} | {min(v):.3f} | {max(v):.3f} |")
    if args.keep:
        print(f"kept {db}", file=sys.stderr)
    else:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
