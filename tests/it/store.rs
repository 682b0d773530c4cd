//! The results store: every run stored, complete or partial, in its own `--db` per
//! test; a database that cannot take it loses no result; clients killed mid-run leave it sound;
//! `results show` prints what the run printed.

use crate::util::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// `linerate ARGS --db DB`, bounded.
fn run(db: &Path, args: &[&str]) -> Output {
    let mut cmd = linerate_command();
    cmd.args(args).arg("--db").arg(db);
    run_bounded(&mut cmd, LIMIT)
}

fn spawn(db: &Path, args: &[&str]) -> Child {
    linerate_command()
        .args(args)
        .arg("--db")
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// The id in a `stored as #N` line.
fn stored_id(text: &str) -> Option<i64> {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("stored as #"))
        .map(|n| n.trim().parse().expect("an id"))
}

/// What a run printed with its `stored as #N` line taken out: that line comes just before the
/// headline line, which is last.
fn without_id(text: &str, id: i64) -> String {
    let (before, after) = text
        .split_once(&format!("stored as #{id}\n"))
        .unwrap_or_else(|| panic!("no id line in {text}"));
    assert_eq!(after.lines().count(), 1, "the headline line follows the id: {text}");
    format!("{before}{after}")
}

fn out_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `linerate results ARGS --json`'s rows.
fn rows(db: &Path, args: &[&str]) -> Vec<Value> {
    let mut full = vec!["results", "--json"];
    full.extend_from_slice(args);
    let v = json_of(&run(db, &full));
    v["results"].as_array().expect("results").clone()
}

fn ids_of(rows: &[Value]) -> Vec<i64> {
    rows.iter().map(|r| r["id"].as_i64().expect("id")).collect()
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid of a child this test started.
    unsafe { libc::kill(pid as i32, sig) };
}

/// The database's own check, read directly (not through linerate).
fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check")
}

fn stored_ids(db: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).expect("open");
    let mut stmt = conn
        .prepare("SELECT r.id FROM records r JOIN documents d ON d.record_id = r.id ORDER BY r.id")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn every_test_kind_is_stored_with_its_labels_and_results_selects_by_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sub").join("results.db");
    let agent = Agent::start(&[]);
    let a = &agent.addr;
    let tcp = run(
        &db,
        &[
            "tcp",
            a,
            "-t",
            "0.5",
            "-i",
            "0",
            "--label",
            "nic=lo",
            "--label",
            "mtu=65536",
        ],
    );
    assert_eq!(tcp.status.code(), Some(0), "{}", stderr(&tcp));
    let tcp_id = stored_id(&out_text(&tcp)).expect("the id before the headline line");
    without_id(&out_text(&tcp), tcp_id);
    let udp = run(&db, &["udp", a, "-t", "0.5", "-i", "0", "--json", "--label", "nic=lo"]);
    let udp_doc = json_of(&udp);
    let udp_id = stored_id(&stderr(&udp)).expect("with --json the id goes to stderr");
    let rr = run(&db, &["rr", a, "-t", "0.5", "-i", "0", "--label", "nic=other"]);
    assert!(rr.status.success(), "{}", stderr(&rr));
    let rr_id = stored_id(&out_text(&rr)).expect("id");
    let none = run(&db, &["tcp", a, "-t", "0.2", "-i", "0", "--no-store"]);
    assert!(none.status.success());
    assert_eq!(stored_id(&out_text(&none)), None, "--no-store stores nothing");

    let all = rows(&db, &[]);
    assert_eq!(ids_of(&all), vec![rr_id, udp_id, tcp_id], "newest first");
    let kinds: Vec<&str> = all.iter().map(|r| r["kind"].as_str().expect("kind")).collect();
    assert_eq!(kinds, ["rr", "udp", "tcp"]);
    for r in &all {
        assert_eq!(r["outcome"], "complete");
        assert_eq!(r["targets"], serde_json::json!([a]));
        assert!(
            r["command"].as_str().expect("command").contains(" --db "),
            "{}",
            r["command"]
        );
    }
    let udp_row = &all[1];
    assert_eq!(udp_row["figures"][0]["name"], "receiver throughput");
    assert_eq!(udp_row["figures"][0]["unit"], "Mbit/s");
    let mbit = udp_row["figures"][0]["value"].as_f64().expect("a figure");
    let expected = f(&udp_doc, "/summary/received/bits_per_second") / 1e6;
    assert!(
        (mbit - expected).abs() <= 1e-9 * expected.max(1.0),
        "{mbit} vs {expected}"
    );
    assert_eq!(
        all[0]["figures"][0]["unit"], "transactions/s",
        "rr: transactions per second"
    );

    assert_eq!(ids_of(&rows(&db, &["--label", "nic=lo"])), vec![udp_id, tcp_id]);
    assert_eq!(
        ids_of(&rows(&db, &["--label", "nic=lo", "--label", "mtu=65536"])),
        vec![tcp_id]
    );
    assert_eq!(ids_of(&rows(&db, &["--kind", "rr"])), vec![rr_id]);
    assert_eq!(ids_of(&rows(&db, &["--limit", "1"])), vec![rr_id]);
    assert_eq!(ids_of(&rows(&db, &["--since", "1h"])).len(), 3);
    assert!(rows(&db, &["--since", "2999-01-01"]).is_empty());

    let shown = run(&db, &["results", "show", &format!("#{udp_id}"), "--json"]);
    assert_eq!(
        out_text(&shown),
        out_text(&udp),
        "show --json prints the document as the run did"
    );

    let labelled = run(&db, &["results", "label", &rr_id.to_string(), "nic=lo", "run=3"]);
    assert!(labelled.status.success(), "{}", stderr(&labelled));
    assert_eq!(ids_of(&rows(&db, &["--label", "nic=lo"])), vec![rr_id, udp_id, tcp_id]);
    assert_eq!(ids_of(&rows(&db, &["--label", "run=3"])), vec![rr_id]);

    let csv = out_text(&run(
        &db,
        &["results", "export", &tcp_id.to_string(), "--format", "csv"],
    ));
    assert!(
        csv.starts_with("id,started_utc,kind,outcome,targets,labels,figure,unit,value\n"),
        "{csv}"
    );
    assert!(
        csv.contains(&format!("\n{tcp_id},")) && csv.contains(",receiver throughput,Mbit/s,"),
        "{csv}"
    );
    let export = json_of(&run(
        &db,
        &["results", "export", &tcp_id.to_string(), &udp_id.to_string()],
    ));
    assert_eq!(
        export["results"][1]["document"], udp_doc,
        "export carries the whole document"
    );

    let rm = run(&db, &["results", "rm", &tcp_id.to_string()]);
    assert!(rm.status.success(), "{}", stderr(&rm));
    assert_eq!(out_text(&rm), format!("removed #{tcp_id}\n"));
    assert_eq!(ids_of(&rows(&db, &[])), vec![rr_id, udp_id]);
    let gone = run(&db, &["results", "show", &tcp_id.to_string()]);
    assert_eq!(gone.status.code(), Some(1));
    assert_eq!(stderr(&gone), format!("linerate: no stored result #{tcp_id}\n"));
    let bad = run(&db, &["results", "show", "x1"]);
    assert_eq!(bad.status.code(), Some(2), "a usage error (issue 23)");
    assert!(stderr(&bad).contains("'x1' is not a result id"), "{}", stderr(&bad));
    let quick = run(&db, &["quick", "-t", "0.3"]);
    assert!(quick.status.success(), "{}", stderr(&quick));
    let quick_id = stored_id(&out_text(&quick)).expect("quick is stored too");
    let labelled = rows(&db, &["--label", "quick=yes"]);
    assert_eq!(ids_of(&labelled), vec![quick_id]);
    assert_eq!(labelled[0]["kind"], "tcp");
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn results_show_reproduces_the_runs_text_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&["--http-port", "0"]);
    let url = agent.http_url("/bytes/1000");
    for args in [
        &["tcp", &agent.addr, "-t", "1.2", "-i", "0.5"][..],
        &["rr", &agent.addr, "-t", "0.5", "-i", "0"][..],
        &["udp", &agent.addr, "-t", "0.5", "-i", "0", "-R"][..],
        &[
            "http",
            &url,
            "--users",
            "2",
            "-d",
            "0.5",
            "--agent",
            &agent.addr,
            "-i",
            "0",
        ][..],
    ] {
        let out = run(&db, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let text = out_text(&out);
        let id = stored_id(&text).expect("id");
        let printed = without_id(&text, id);
        let shown = run(&db, &["results", "show", &id.to_string()]);
        assert!(shown.status.success(), "{}", stderr(&shown));
        let shown = out_text(&shown);
        assert!(shown.len() > 200, "a report: {shown}");
        // What the run printed: its live lines, a blank line, then the report block.
        let live = printed
            .strip_suffix(&shown)
            .unwrap_or_else(|| panic!("{args:?}: the run's report\n{printed}\nis not what show prints\n{shown}"));
        let live = live.strip_suffix('\n').expect("a blank line before the report");
        assert!(
            live.lines().all(|l| !l.trim().is_empty()),
            "only live lines before it: {live:?}"
        );
    }
}

#[test]
fn a_sweep_is_stored_as_one_record_and_shown_as_its_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let out = run(&db, &["rr", &agent.addr, "--sizes", "1,1000", "-t", "0.3", "-i", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = out_text(&out);
    let id = stored_id(&text).expect("id");
    let printed = without_id(&text, id);
    let shown = out_text(&run(&db, &["results", "show", &id.to_string()]));
    assert_eq!(printed, shown, "the sweep's table, as it was printed");
    let row = &rows(&db, &[])[0];
    assert_eq!(row["kind"], "rr sweep");
    assert_eq!(row["figures"][0]["value"], 2.0, "two points");
}

#[test]
fn a_repeated_test_is_stored_as_one_record_and_shown_as_it_ran() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let out = run(
        &db,
        &[
            "tcp",
            &agent.addr,
            "--repeat",
            "2",
            "--pause",
            "0",
            "-t",
            "0.3",
            "-i",
            "0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = out_text(&out);
    let id = stored_id(&text).expect("id");
    let printed = without_id(&text, id);
    let shown = out_text(&run(&db, &["results", "show", &id.to_string()]));
    assert_eq!(
        printed, shown,
        "each run's line and the aggregate, as they were printed"
    );
    let row = &rows(&db, &[])[0];
    assert_eq!(row["kind"], "tcp repeat");
    assert_eq!(row["figures"][0]["name"], "receiver throughput (mean)");
    let doc = json_of(&run(&db, &["results", "show", &id.to_string(), "--json"]));
    let mean = f(&doc, "/aggregate/0/mean");
    assert!(
        (row["figures"][0]["value"].as_f64().expect("value") - mean).abs() <= 1e-9 * mean,
        "the column is the document's mean"
    );
}

#[test]
fn two_concurrent_clients_are_both_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    // Each client stores as soon as its run ends: the two runs end together, the writes collide.
    let clients: Vec<Child> = (0..2)
        .map(|_| spawn(&db, &["tcp", &agent.addr, "-t", "1", "-i", "0", "--json"]))
        .collect();
    let mut ids: Vec<i64> = clients
        .into_iter()
        .map(|c| {
            let out = wait_bounded(c, LIMIT);
            json_of(&out);
            stored_id(&stderr(&out)).unwrap_or_else(|| panic!("stored: {}", stderr(&out)))
        })
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(stored_ids(&db), ids);
}

#[test]
fn clients_killed_mid_run_leave_the_database_sound_and_lose_no_completed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&["--max-tests", "16"]);
    let mut completed = Vec::new();
    let t0 = Instant::now();
    for round in 0..20u64 {
        let writers: Vec<Child> = (0..2)
            .map(|_| spawn(&db, &["udp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]))
            .collect();
        let victim = spawn(&db, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
        // Kill times spread over the run and the moment it stores (the run ends at about 0.3 s
        // after its connection; the store follows).
        std::thread::sleep(Duration::from_millis(200 + round * 23 % 400));
        signal(victim.id(), libc::SIGKILL);
        let out = wait_bounded(victim, LIMIT);
        if let Some(id) = stored_id(&stderr(&out)) {
            completed.push(id);
        }
        for w in writers {
            let out = wait_bounded(w, LIMIT);
            json_of(&out);
            completed.push(stored_id(&stderr(&out)).unwrap_or_else(|| panic!("stored: {}", stderr(&out))));
        }
        assert!(t0.elapsed() < Duration::from_secs(240), "bounded");
    }
    assert_eq!(integrity(&db), "ok");
    let stored = stored_ids(&db);
    for id in &completed {
        assert!(stored.contains(id), "completed run #{id} is stored");
    }
    assert!(completed.len() >= 40, "every writer completed");
    let check = run(&db, &["results", "check"]);
    assert_eq!((check.status.code(), out_text(&check)), (Some(0), "ok\n".to_string()));
}

/// A store that fails keeps the result: the run prints it, exits as the measurement says, and
/// the fallback file holds the document it printed.
fn loses_no_result(out: &Output, fallback_dir: &Path) {
    assert_eq!(out.status.code(), Some(0), "exit status unchanged: {}", stderr(out));
    let doc = json_of(out);
    check_document(&doc);
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let path = PathBuf::from(
        err.trim_end()
            .rsplit_once("the document is in ")
            .unwrap_or_else(|| panic!("names the fallback file: {err}"))
            .1,
    );
    assert!(
        path.starts_with(fallback_dir),
        "{} in {}",
        path.display(),
        fallback_dir.display()
    );
    let saved = std::fs::read(&path).expect("the fallback file");
    assert_eq!(saved, out.stdout, "the fallback file holds the whole document");
}

#[test]
fn a_corrupt_or_newer_database_loses_no_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::start(&[]);
    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, vec![0x5a_u8; 16384]).expect("write");
    let out = run(&corrupt, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    loses_no_result(&out, dir.path());
    assert!(stderr(&out).contains("not a database"), "{}", stderr(&out));

    let newer = dir.path().join("newer.db");
    let conn = rusqlite::Connection::open(&newer).expect("create");
    conn.execute_batch("CREATE TABLE t (x); PRAGMA user_version = 999;")
        .expect("newer");
    drop(conn);
    let out = run(&newer, &["udp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    loses_no_result(&out, dir.path());
    assert!(
        stderr(&out).contains("layout 999, newer than this build's"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_read_only_directory_loses_no_result() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let open = std::fs::Permissions::from_mode(0o777);
    std::fs::set_permissions(dir.path(), open.clone()).expect("chmod");
    let ro = dir.path().join("ro");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&ro).expect("mkdir");
    std::fs::create_dir(&tmp).expect("mkdir");
    std::fs::set_permissions(&tmp, open).expect("chmod");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let db = ro.join("results.db");
    let agent = Agent::start(&[]);
    // Root writes through any mode: the client runs as nobody, as a user would.
    let mut cmd = if is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(bin_for_anyone());
        c
    } else {
        std::process::Command::new(BIN)
    };
    cmd.args(["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json", "--db"])
        .arg(&db)
        .env("TMPDIR", &tmp);
    let out = run_bounded(&mut cmd, LIMIT);
    loses_no_result(&out, &tmp);
    assert!(!db.exists());
}

#[test]
fn ctrl_c_or_sigterm_mid_run_stores_a_partial_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let child = spawn(&db, &["tcp", &agent.addr, "-t", "20", "-i", "0", "--label", "cut=yes"]);
        std::thread::sleep(Duration::from_millis(1500));
        signal(child.id(), sig);
        let out = wait_bounded(child, LIMIT);
        assert_eq!(out.status.code(), Some(3), "partial: {}", stderr(&out));
        let id = stored_id(&out_text(&out)).expect("stored");
        let row = rows(&db, &[]).into_iter().find(|r| r["id"] == id).expect("row");
        assert_eq!(row["outcome"], "partial", "signal {sig}");
        assert_eq!(row["labels"]["cut"], "yes");
        let doc = json_of(&run(&db, &["results", "show", &id.to_string(), "--json"]));
        assert_eq!(doc["partial"], true);
    }
}

#[test]
fn an_agent_lost_mid_run_stores_the_partial_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let mut agent = Agent::start(&[]);
    let child = spawn(&db, &["tcp", &agent.addr, "-t", "20", "-i", "0", "--json"]);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = agent.child.kill();
    let _ = agent.child.wait();
    let out = wait_bounded(child, LIMIT);
    let doc = json_with_status(&out, 3);
    assert_eq!(doc["partial"], true);
    let id = stored_id(&stderr(&out)).unwrap_or_else(|| panic!("stored: {}", stderr(&out)));
    let shown = run(&db, &["results", "show", &id.to_string(), "--json"]);
    assert_eq!(shown.stdout, out.stdout, "the partial document, as printed");
    let row = rows(&db, &[]).into_iter().find(|r| r["id"] == id).expect("row");
    assert_eq!(row["outcome"], "partial");
}

#[test]
fn a_database_locked_past_the_busy_timeout_loses_no_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let first = run(&db, &["tcp", &agent.addr, "-t", "0.2", "-i", "0"]);
    assert!(first.status.success(), "{}", stderr(&first));
    // Another writer holds the write lock for longer than the client waits (5 s).
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch("BEGIN EXCLUSIVE; INSERT INTO labels VALUES (1, 'held', 'yes');")
        .expect("lock");
    let t = Instant::now();
    let out = run(&db, &["tcp", &agent.addr, "-t", "0.2", "-i", "0", "--json"]);
    assert!(
        t.elapsed() >= Duration::from_secs(4),
        "waited its turn first: {:?}",
        t.elapsed()
    );
    loses_no_result(&out, dir.path());
    assert!(stderr(&out).contains("locked"), "{}", stderr(&out));
    conn.execute_batch("ROLLBACK").expect("unlock");
    assert_eq!(stored_ids(&db).len(), 1);
}

#[test]
fn a_full_disk_loses_no_result() {
    if !can_run(&[
        Need::Root {
            why: "to mount a small tmpfs in a mount namespace of its own",
        },
        Need::Program {
            name: "unshare",
            package: "util-linux",
        },
    ]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let full = dir.path().join("small");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&full).expect("mkdir");
    std::fs::create_dir(&tmp).expect("mkdir");
    let agent = Agent::start(&[]);
    // In a mount namespace of its own: a 1 MiB tmpfs, a first run stored on it, the rest of it
    // filled, then the run whose store meets the full disk (its stdout is the script's).
    let script = r#"
        set -e
        mount -t tmpfs -o size=1m tmpfs "$FULL"
        "$BIN" tcp "$AGENT" -t 0.2 -i 0 --db "$FULL/results.db" >/dev/null 2>&1
        dd if=/dev/zero of="$FULL/filler" bs=4k 2>/dev/null || true
        "$BIN" tcp "$AGENT" -t 0.2 -i 0 --json --db "$FULL/results.db"
    "#;
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("FULL", &full)
        .env("BIN", BIN)
        .env("AGENT", &agent.addr)
        .env("TMPDIR", &tmp);
    let out = run_bounded(&mut cmd, LIMIT);
    loses_no_result(&out, &tmp);
    assert!(stderr(&out).contains("disk"), "names the disk: {}", stderr(&out));
}

/// Documents were stored pretty-printed (58 KB for a short tcp run). They
/// are stored on one line, compressed; `results show --json` still prints them as the run did,
/// and a database written by the build before (layout 1, pretty text) still reads.
#[test]
fn issue_15_documents_are_stored_compressed_and_old_pretty_ones_still_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::start(&[]);
    let db = dir.path().join("results.db");
    let out = run(&db, &["tcp", &agent.addr, "-t", "0.5", "-i", "0.1", "--json"]);
    let printed = json_of(&out);
    let id = stored_id(&stderr(&out)).expect("stored");
    let conn = rusqlite::Connection::open(&db).expect("open");
    let (stored_bytes, encoding): (i64, String) = conn
        .query_row(
            "SELECT length(json), encoding FROM documents WHERE record_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the stored row");
    assert_eq!(encoding, "zlib");
    assert!(
        (stored_bytes as usize) * 4 < out.stdout.len(),
        "{stored_bytes} bytes stored for a {}-byte document",
        out.stdout.len()
    );
    let shown = run(&db, &["results", "show", &id.to_string(), "--json"]);
    assert_eq!(out_text(&shown), out_text(&out), "pretty, byte for byte as printed");
    drop(conn);

    // The same run as the layout 1 build stored it: its tables, the pretty text as printed.
    let old = dir.path().join("old.db");
    let conn = rusqlite::Connection::open(&old).expect("create");
    conn.execute_batch(linerate_results::store::schema::MIGRATIONS[0])
        .expect("layout 1");
    conn.execute_batch(
        "PRAGMA user_version = 1;
         INSERT INTO records (started_unix_ms, stored_unix_ms, kind, outcome, targets, command,
             campaign, linerate, figure_name, figure_unit, figure_value)
         VALUES (1764034212000, 1764034213000, 'tcp', 'complete', '[]', 'linerate tcp', NULL,
             '0.1.0', 'receiver throughput', 'Mbit/s', 1.0);",
    )
    .expect("record");
    conn.execute(
        "INSERT INTO documents (record_id, json) VALUES (1, ?1)",
        [out_text(&out)],
    )
    .expect("document");
    drop(conn);
    let shown = run(&old, &["results", "show", "1", "--json"]);
    assert_eq!(out_text(&shown), out_text(&out), "{}", stderr(&shown));
    let text = run(&old, &["results", "show", "1"]);
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(out_text(&text).contains("Mbit/s"), "{}", out_text(&text));
    let export = json_of(&run(&old, &["results", "export", "1"]));
    assert_eq!(export["results"][0]["document"], printed);
    // Opening it to store migrates it; the old record stays as it was beside the new one.
    let new = run(&old, &["tcp", &agent.addr, "-t", "0.2", "-i", "0"]);
    assert!(new.status.success(), "{}", stderr(&new));
    assert_eq!(ids_of(&rows(&old, &[])).len(), 2);
    assert_eq!(
        out_text(&run(&old, &["results", "show", "1", "--json"])),
        out_text(&out)
    );
    assert_eq!(integrity(&old), "ok");
}

/// An http `--baseline` line was not stored, so `results show` of an http
/// sweep left it out. The sweep's document keeps the baseline (and each run's result all of
/// it): `results show` prints the sweep as it ran, baseline line first, and a single run's
/// report after the same line.
#[test]
fn issue_15_an_http_baseline_is_stored_and_results_show_prints_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&["--http-port", "0"]);
    let url = agent.http_url("/bytes/1000");
    let out = run(
        &db,
        &["http", &url, "--users", "2,4", "-d", "0.5", "-i", "0", "--baseline"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = out_text(&out);
    let id = stored_id(&text).expect("id");
    let printed = without_id(&text, id);
    let first = printed.lines().next().expect("a line");
    assert!(
        first.starts_with("baseline: ") && first.ends_with("(1000 B objects, 2 users)"),
        "{printed}"
    );
    assert_eq!(printed.matches("baseline: ").count(), 1, "printed once: {printed}");
    let shown = run(&db, &["results", "show", &id.to_string()]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(out_text(&shown), printed, "the sweep as it ran, baseline line first");
    let doc = json_of(&run(&db, &["results", "show", &id.to_string(), "--json"]));
    assert_eq!(doc["test"], "http sweep");
    assert_eq!(doc["baseline"]["object_bytes"], 1000);
    assert_eq!(doc["baseline"]["users"], 2);
    let rps = f(&doc, "/baseline/responses_per_second");
    assert!(rps > 0.0, "{rps}");
    assert_eq!(
        f(&doc, "/points/1/result/summary/baseline/responses_per_second"),
        rps,
        "each point's result carries the same baseline"
    );
    assert_eq!(doc["points"][1]["result"]["summary"]["baseline"]["users"], 2);

    let out = run(
        &db,
        &["http", &url, "--users", "3", "-d", "0.5", "-i", "0", "--baseline"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = out_text(&out);
    let id = stored_id(&text).expect("id");
    let first = text.lines().next().expect("a line").to_string() + "\n";
    assert!(first.ends_with("(1000 B objects, 3 users)\n"), "{text}");
    let shown = out_text(&run(&db, &["results", "show", &id.to_string()]));
    let report = shown
        .strip_prefix(&first)
        .unwrap_or_else(|| panic!("the baseline line first: {shown}"));
    assert!(report.len() > 200, "then the report: {shown}");
    assert!(
        without_id(&text, id).ends_with(&format!("\n{report}")),
        "the report as the run printed it: {text}\n---\n{shown}"
    );
}

/// Runs linerate with `args` on `db` and returns its exit code, stdout, stderr and peak RSS in
/// KiB, the child's own (GNU time's report: [`run_with_peak_rss`]).
fn run_measured(db: &Path, args: &[&str]) -> (Option<i32>, Vec<u8>, String, u64) {
    let mut cmd = linerate_command();
    cmd.args(args).arg("--db").arg(db);
    let (out, peak_kib) = run_with_peak_rss(&cmd, LIMIT);
    let err = stderr(&out);
    (out.status.code(), out.stdout, err, peak_kib)
}

/// A zlib stream that inflates to `mib` MiB of zeros in about 1 KiB per MiB: one MiB compressed
/// and flushed to a byte boundary (a non-final block that refers only to itself), repeated.
fn zlib_bomb(mib: usize) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&vec![0u8; 1 << 20]).expect("compress");
    z.flush().expect("a sync flush");
    let first = z.get_ref().clone();
    let (header, block) = first.split_at(2);
    let mut bomb = header.to_vec();
    for _ in 0..mib {
        bomb.extend_from_slice(block);
    }
    // A final fixed-Huffman block with only its end, then Adler-32 of the zeros (A = 1, B = n).
    bomb.extend_from_slice(&[0x03, 0x00]);
    let b = ((mib as u64) << 20) % 65_521;
    bomb.extend_from_slice(&(((b as u32) << 16) | 1).to_be_bytes());
    bomb
}

/// A 1 MB zlib bomb in a shared `--db` made `results show`, `report` and `export`
/// inflate 1 GB and peak at 1.1 GB RSS. A stored document that inflates past 256 MiB is now
/// refused in one line, having inflated no more than that into nothing: it is counted before it
/// is kept, so a refused bomb holds none of it in memory.
#[test]
fn issue_22_a_zlib_bomb_in_the_store_is_refused_with_bounded_memory() {
    if !can_run(&[PEAK_RSS]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::start(&[]);
    let db = dir.path().join("results.db");
    let out = run(&db, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    let id = stored_id(&stderr(&out)).expect("stored");
    let bomb = zlib_bomb(1024);
    assert!(bomb.len() < 2 << 20, "a {}-byte bomb", bomb.len());
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "UPDATE documents SET json = ?1 WHERE record_id = ?2",
        rusqlite::params![bomb, id],
    )
    .expect("plant the bomb");
    drop(conn);
    let html = dir.path().join("x.html");
    let id = id.to_string();
    let id = id.as_str();
    for args in [
        vec!["results", "show", id],
        vec!["results", "show", id, "--json"],
        vec!["results", "export", id],
        vec!["report", id, "-o", html.to_str().expect("utf-8")],
    ] {
        let (status, stdout, err, peak_kib) = run_measured(&db, &args);
        eprintln!("{args:?}: peak RSS {} MiB", peak_kib >> 10);
        assert_ne!(status, Some(0), "{args:?} refused: {err}");
        assert!(stdout.is_empty(), "{args:?} printed {} bytes", stdout.len());
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains("is over 256 MiB of JSON"), "{args:?}: {err}");
        assert!(
            peak_kib < 64 << 10,
            "{args:?} peaked at {} MiB (the bomb is 1 GiB)",
            peak_kib >> 10
        );
    }
}

/// Every byte a terminal would act on: C0 controls but the line feed, DEL, C1 controls.
fn control_chars(text: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(text)
        .chars()
        .filter(|&c| c != '\n' && c.is_control())
        .collect()
}

/// Hostile rows reached the terminal raw (`results` printed ESC and BEL bytes and a
/// forged line; the CSV export 60 ESC bytes, and cells a spreadsheet runs as formulas). Every
/// string of a row and of a shown document now has its control characters escaped, and CSV text
/// cells that start like a formula are prefixed with `'`; a negative figure stays a number.
#[test]
fn issue_22_hostile_rows_print_no_control_byte_and_no_live_formula() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::start(&[]);
    let db = dir.path().join("results.db");
    let out = run(&db, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    let id = stored_id(&stderr(&out)).expect("stored");
    assert_eq!(id, 1, "the labels below are the first record's");
    let mut doc = json_of(&out);
    doc["notes"] = serde_json::json!(["\u{1b}[2J\u{7}cleared\n#99  forged line", "\u{9b}31mred"]);
    let hosts = doc["hosts"].as_object_mut().expect("hosts");
    let client = hosts.remove("client").expect("the client's record");
    hosts.insert("client\u{1b}]0;title\u{7}".to_string(), client);
    let stored = linerate_results::store::document::encode(&doc.to_string()).expect("encode");
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "UPDATE records SET targets = '[\"=cmd|'' /C calc''!A0\", \"\\u001b[31mred\"]',
             command = 'linerate' || char(27) || '[2J';
         UPDATE figures SET name = '@SUM(1+1)' || char(7), unit = char(9) || '=1+1', value = -5
             WHERE position = 0;
         INSERT INTO labels (record_id, key, value) VALUES
             (1, '=k', 'HYPERLINK(\"http://x\",\"y\")'),
             (1, 'b', '+1' || char(27) || '[2J'),
             (1, 'c', '-2+3' || char(10) || '#99  2025-01-01 00:00:00  tcp  complete  forged'),
             (1, 'd', char(13) || '=1'),
             (1, 'e', char(27) || ']8;;http://x' || char(7) || 'link');",
    )
    .expect("hostile row");
    conn.execute(
        "UPDATE documents SET json = ?1 WHERE record_id = ?2",
        rusqlite::params![stored, id],
    )
    .expect("hostile document");
    drop(conn);

    let list = run(&db, &["results"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert_eq!(control_chars(&list.stdout), [], "{}", out_text(&list));
    assert_eq!(
        out_text(&list).lines().count(),
        2,
        "a head and one row: {}",
        out_text(&list)
    );

    let shown = run(&db, &["results", "show", &id.to_string()]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(control_chars(&shown.stdout), [], "{}", out_text(&shown));
    assert!(
        out_text(&shown).contains("\\u{1b}[2J\\u{7}cleared\\u{a}#99"),
        "{}",
        out_text(&shown)
    );

    let csv = run(&db, &["results", "export", &id.to_string(), "--format", "csv"]);
    assert!(csv.status.success(), "{}", stderr(&csv));
    assert_eq!(control_chars(&csv.stdout), [], "{}", out_text(&csv));
    let text = out_text(&csv);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("id,started_utc,kind,outcome,targets,labels,figure,unit,value")
    );
    let mut values = Vec::new();
    for line in lines {
        let cells = csv_cells(line);
        assert_eq!(cells.len(), 9, "{line}");
        for cell in &cells[..8] {
            assert!(
                !cell.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "a live formula: {cell:?} in {line}"
            );
        }
        values.push(cells[8].clone());
    }
    assert_eq!(values[0], "-5", "a negative figure stays a number: {text}");
    assert!(text.contains("'@SUM(1+1)\\u{7}"), "{text}");
    assert!(text.contains("'=cmd|' /C calc'!A0 \\u{1b}[31mred"), "{text}");
    assert!(text.contains("\"'=k=HYPERLINK(\"\"http://x\"\""), "{text}");
}

/// RFC 4180 cells of one line (quoted cells may hold commas and doubled quotes).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().expect("a cell").push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => cells.last_mut().expect("a cell").push(c),
        }
    }
    cells
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// The database was created 0644 in a 0755 directory, fallback files 0644: anyone on
/// the host could read every result (hosts, addresses, commands). What linerate creates is now
/// its user's alone: the directory 0700, the database and SQLite's -wal and -shm 0600, fallback
/// files 0600.
#[test]
fn issue_22_the_database_and_fallback_files_are_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = Agent::start(&[]);
    let db = dir.path().join("new/store/results.db");
    let out = run(&db, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    assert!(stored_id(&stderr(&out)).is_some(), "{}", stderr(&out));
    assert_eq!(mode(&dir.path().join("new")), 0o700);
    assert_eq!(mode(&dir.path().join("new/store")), 0o700);
    assert_eq!(mode(&db), 0o600);
    // SQLite makes the log and the shared memory with the database's mode: open it as linerate
    // does (WAL) and look while they exist.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let n: i64 = conn
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .expect("read");
    assert_eq!(n, 1);
    for side in ["results.db-wal", "results.db-shm"] {
        assert_eq!(mode(&dir.path().join("new/store").join(side)), 0o600, "{side}");
    }
    drop(conn);

    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, vec![0x5a_u8; 16384]).expect("write");
    let out = run(&corrupt, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--json"]);
    loses_no_result(&out, dir.path());
    let err = stderr(&out);
    let fallback = err
        .trim_end()
        .rsplit_once("the document is in ")
        .expect("a fallback file")
        .1;
    assert_eq!(mode(Path::new(fallback)), 0o600, "{fallback}");
}

/// `results`, `results show`, `export` and `report` failed on a database on a
/// read-only filesystem with SQLite's "Error code 14": they opened it read-write, then read-only
/// without the `-shm` index a WAL database needs. Readers open it read-only (immutable where
/// nothing can be made beside it), and a write there names the read-only filesystem in words.
#[test]
fn issue_23_a_database_on_a_read_only_filesystem_reads_and_errors_name_their_cause() {
    if !can_run(&[
        Need::Root {
            why: "to mount a tmpfs read-only in a mount namespace of its own",
        },
        Need::Program {
            name: "unshare",
            package: "util-linux",
        },
    ]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("results.db");
    let agent = Agent::start(&[]);
    let first = run(&db, &["tcp", &agent.addr, "-t", "0.3", "-i", "0", "--label", "ro=yes"]);
    let id = stored_id(&out_text(&first)).unwrap_or_else(|| panic!("stored: {}", stderr(&first)));
    let ro = dir.path().join("ro");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&ro).expect("mkdir");
    std::fs::create_dir(&out_dir).expect("mkdir");
    // Each reader in turn on a copy of the database on a tmpfs remounted read-only; every
    // command's status and stderr go to a file of their own, its stdout to another.
    let script = r#"
        set -e
        mount -t tmpfs -o size=4m tmpfs "$RO"
        cp "$DB" "$RO/results.db"
        mount -o remount,ro "$RO"
        try() { name=$1; shift; set +e; "$BIN" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; echo $? >"$OUT/$name.rc"; set -e; }
        try list results --json --db "$RO/results.db"
        try show results show "$ID" --db "$RO/results.db"
        try export results export "$ID" --db "$RO/results.db"
        try report report "$ID" -o "$OUT/page.html" --db "$RO/results.db"
        try label results label "$ID" more=no --db "$RO/results.db"
        ls -a "$RO" >"$OUT/ls"
    "#;
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("RO", &ro)
        .env("DB", &db)
        .env("OUT", &out_dir)
        .env("ID", id.to_string())
        .env("BIN", BIN);
    let out = run_bounded(&mut cmd, LIMIT);
    assert!(out.status.success(), "the script: {}", stderr(&out));
    let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap_or_default();
    for name in ["list", "show", "export", "report"] {
        assert_eq!(
            read(&format!("{name}.rc")).trim(),
            "0",
            "{name}: {}",
            read(&format!("{name}.err"))
        );
        assert!(
            !read(&format!("{name}.err")).contains("Error code"),
            "{name}: {}",
            read(&format!("{name}.err"))
        );
    }
    let listed: Value = serde_json::from_str(&read("list.out")).expect("the list's JSON");
    assert_eq!(listed["results"][0]["id"], id);
    assert_eq!(listed["results"][0]["labels"]["ro"], "yes");
    assert!(read("show.out").contains("SEND SIDE"), "{}", read("show.out"));
    let exported: Value = serde_json::from_str(&read("export.out")).expect("the export's JSON");
    assert_eq!(exported["results"][0]["document"]["test"], "tcp");
    assert!(out_dir.join("page.html").exists(), "report wrote its page");
    // A write cannot succeed there: it says why in words, not SQLite's code.
    assert_ne!(read("label.rc").trim(), "0");
    let err = read("label.err");
    assert!(err.contains("read-only"), "{err}");
    assert!(!err.contains("Error code"), "{err}");
    // Nothing was made beside the database.
    assert_eq!(
        read("ls").split_whitespace().collect::<Vec<_>>(),
        [".", "..", "results.db"]
    );
}
