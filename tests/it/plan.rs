//! `linerate plan check`: a plan is read, every point's options are checked by the
//! test command's own definitions, and the runs and time are counted; a wrong plan names its
//! line and column. Nothing here sends traffic.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn check(text: &str, extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, text).expect("write plan");
    let mut args = vec!["plan", "check", path.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    linerate(&args, LIMIT)
}

const PLAN: &str = r#"name = "sizes"
[defaults]
time = "20s"
[quick]
time = "1s"

[[test]]
name = "toe"
kind = "tcp"
targets = ["127.0.0.1"]
repeat = 3
pause = "2s"
vary = { length = ["4K", "64K", "1M"] }
[[test.variant]]
name = "A"
window = "1M"
[[test.variant]]
name = "B"
window = "4M"

[[test]]
kind = "rr"
targets = ["127.0.0.1"]
count = 500
"#;

#[test]
fn plan_check_says_its_estimate_leaves_out_the_profile_commands() {
    let plan = PLAN.replace(
        "name = \"B\"\nwindow = \"4M\"",
        "name = \"B\"\nwindow = \"4M\"\nprofile = \"offload-on\"",
    );
    assert_ne!(plan, PLAN, "variant B runs under a profile");
    let out = check(&plan, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // Variant B: 3 lengths x 3 runs, each with the agent's commands before and after.
    assert!(
        text.contains("18 runs, about 7 min (+ the agents' profile commands around 9 runs, not timed)"),
        "{text}"
    );
    assert!(
        text.contains("test rr (rr): 1 point, 1 run, each limited by a count\n"),
        "no profile, no words: {text}"
    );
}

#[test]
fn issue_16_plan_check_counts_points_runs_and_time() {
    let out = check(PLAN, &["--commands"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // 3 lengths x 2 variants x 3 repeats of (20 s + 1 s) plus 2 pauses of 2 s each point.
    assert!(
        text.contains("test toe (tcp): 6 points (3 length x 2 variants), 18 runs, about 7 min"),
        "{text}"
    );
    assert!(
        text.contains("linerate tcp 127.0.0.1 --time=20s --repeat=3 --pause=2s --window=4M --length=1M"),
        "{text}"
    );
    // The default time gives way to the test's count, which excludes it.
    assert!(text.contains("linerate rr 127.0.0.1 --count=500\n"), "{text}");
    let quick = check(PLAN, &["--quick"]);
    let text = String::from_utf8_lossy(&quick.stdout);
    assert!(
        text.contains("18 runs, about 60 s"),
        "quick: 18 x (1 + 1) s + 12 x 2 s pauses: {text}"
    );
    assert!(
        text.contains("test rr (rr): 1 point, 1 run, each limited by a count"),
        "quick keeps a count: {text}"
    );
}

#[test]
fn issue_16_a_wrong_plan_names_line_column_and_the_nearest_option() {
    let typo = PLAN.replace("repeat = 3", "lenght = \"1K\"\nrepeat = 3");
    let out = check(&typo, &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("line 11, column 1: `lenght` is not an option of `linerate tcp` (did you mean `length`?)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    let bad_value = PLAN.replace("window = \"4M\"", "window = \"4Q\"");
    let err = stderr(&check(&bad_value, &[]));
    assert!(err.contains("line 19, column 1"), "the variant's window: {err}");

    let bad_toml = PLAN.replace("count = 500", "count = [500");
    let out = check(&bad_toml, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 24"), "{}", stderr(&out));
}

/// A plan against `agent` whose points take about `seconds` each: two lengths x two variants
/// of tcp, and an rr point.
fn run_plan(agent: &str, seconds: &str) -> String {
    writes_plan("loopback", agent, &format!("time = \"{seconds}\""))
        + &format!(
            r#"
[[test]]
name = "latency"
kind = "rr"
targets = ["{agent}"]
count = 300
"#
        )
}

fn campaign_of(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("campaign ")?.split(':').next())
        .expect("the campaign's id")
        .to_string()
}

#[test]
fn issue_16_plan_run_stores_every_point_with_its_labels_and_prints_the_tables() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, run_plan(&agent.addr, "0.3s")).expect("write");
    let db = dir.path().join("r.db");
    let (plan, db) = (plan.to_str().expect("path"), db.to_str().expect("path"));
    let out = linerate(&["plan", "run", plan, "--quick", "--db", db], Duration::from_secs(120));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let id = campaign_of(&stderr(&out));
    assert!(
        stderr(&out).contains("5 points run (5 complete, 0 partial, 0 failed)"),
        "{}",
        stderr(&out)
    );
    // The seeds' shape: the varied value down, the variants across, a cell per point.
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("length"))
        .expect("a table headed by the varied option");
    assert!(lines[head].contains("one") && lines[head].contains("two"), "{text}");
    assert!(
        lines[head + 1].starts_with("4K") && lines[head + 2].starts_with("64K"),
        "{text}"
    );
    assert_eq!(
        lines[head + 1].matches(" #").count(),
        2,
        "a stored run per variant: {text}"
    );
    // Every run stored under the campaign with its point's labels.
    let rows = json_of(&linerate(
        &[
            "results",
            "--json",
            "--db",
            db,
            "--label",
            "point.length=64K",
            "--label",
            "campaign.variant=two",
        ],
        LIMIT,
    ));
    let rows = rows["results"]
        .as_array()
        .or(rows.as_array())
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["campaign"], id.as_str());
    let doc = json_of(&linerate(
        &["results", "show", &rows[0]["id"].to_string(), "--json", "--db", db],
        LIMIT,
    ));
    assert_eq!(doc["options"]["streams"], 2, "variant two ran -P 2");
    assert_eq!(doc["options"]["buffer_bytes"], 65536, "at length 64K");
    // The tables again from the store alone.
    let shown = linerate(&["plan", "show", &id, "--db", db], LIMIT);
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        text,
        "plan show prints the same tables"
    );
    let json = json_of(&linerate(&["plan", "show", &id, "--json", "--db", db], LIMIT));
    assert_eq!(json["tables"].as_array().map(Vec::len), Some(2));
}

#[test]
fn issue_16_ctrl_c_stops_a_campaign_and_resume_runs_only_what_is_missing() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, run_plan(&agent.addr, "1.5s")).expect("write");
    let db = dir.path().join("r.db");
    let (plan, db) = (plan.to_str().expect("path"), db.to_str().expect("path"));
    let mut child = linerate_command()
        .args(["plan", "run", plan, "--quick", "--db", db])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn");
    let mut err = child.stderr.take().expect("stderr");
    // After the first point is stored, Ctrl-C (to the whole group, as a terminal sends it).
    let mut seen = String::new();
    let mut buf = [0u8; 256];
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !seen.contains("stored as #1") && std::time::Instant::now() < deadline {
        let n = err.read(&mut buf).expect("read stderr");
        if n == 0 {
            break;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("stored as #1"), "{seen}");
    // SAFETY: kill(2) on the process group this test made; no memory is involved.
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGINT);
    }
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    seen += &rest;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the campaign did not stop: {seen}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(3), "{seen}");
    assert!(seen.contains("--resume"), "says how to resume: {seen}");
    let id = campaign_of(&seen);
    let done = stored_points(db);
    assert!((1..5).contains(&done.len()), "stopped part way: {done:?}");

    let resumed = linerate(
        &["plan", "run", plan, "--quick", "--db", db, "--resume", &id],
        Duration::from_secs(120),
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let missing = 5 - done.iter().filter(|(_, complete)| *complete).count();
    assert!(
        stderr(&resumed).contains(&format!("{missing} of 5 points to run")),
        "{}",
        stderr(&resumed)
    );
    let after = stored_points(db);
    let complete: std::collections::BTreeSet<String> =
        after.iter().filter(|(_, c)| *c).map(|(p, _)| p.clone()).collect();
    assert_eq!(complete.len(), 5, "every point complete once resumed: {after:?}");
}

/// (campaign.point, complete) of every stored run.
fn stored_points(db: &str) -> Vec<(String, bool)> {
    let v = json_of(&linerate(&["results", "--json", "--db", db, "--limit", "0"], LIMIT));
    let rows = v["results"].as_array().or(v.as_array()).cloned().unwrap_or_default();
    rows.iter()
        .map(|r| {
            (
                r["labels"]["campaign.point"].as_str().unwrap_or("?").to_string(),
                r["outcome"] == "complete",
            )
        })
        .collect()
}

#[test]
fn issue_21_a_campaign_finds_its_points_in_the_store_not_in_stdout() {
    // With `json = true` each point's child prints its document on stdout and its
    // `stored as #N` on stderr: a runner reading the child's stdout would find nothing stored.
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    let text =
        writes_plan("quiet", &agent.addr, "time = \"0.3s\"").replace("[defaults]\n", "[defaults]\njson = true\n");
    assert!(text.contains("json = true"), "{text}");
    std::fs::write(&plan, text).expect("write");
    let db = dir.path().join("r.db");
    let (plan, db) = (plan.to_str().expect("path"), db.to_str().expect("path"));
    let out = linerate(&["plan", "run", plan, "--quick", "--db", db], Duration::from_secs(60));
    let (text, err) = (String::from_utf8_lossy(&out.stdout).into_owned(), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(err.contains("4 points run (4 complete, 0 partial, 0 failed)"), "{err}");
    assert!(!err.contains("not stored"), "{err}");
    assert_eq!(stored_points(db).len(), 4);
    for point in ["length=4K variant one", "length=64K variant two"] {
        let line = format!("writes {point}: stored as #");
        assert!(err.contains(&line), "{line} in {err}");
    }
    // The tables come at the end only when the campaign found what it stored.
    assert!(
        text.lines()
            .any(|l| l.starts_with("64K") && l.matches(" #").count() == 2),
        "{text}"
    );
}

/// A tcp plan against `agent` with a variant per profile (`profile = NAME`), 0.3 s a point.
fn profiled_plan(agent: &str, profiles: &[&str]) -> String {
    let mut plan = format!(
        "name = \"profiled\"\n[defaults]\ninterval = \"0\"\ntime = \"0.3s\"\n\n[[test]]\nname = \"ab\"\nkind = \"tcp\"\ntargets = [\"{agent}\"]\n"
    );
    for p in profiles {
        plan += &format!("[[test.variant]]\nname = \"{p}\"\nprofile = \"{p}\"\n");
    }
    plan
}

/// `plan check` passed a plan whose profiles the agents did not have, and the run then
/// had every point that asked for one refused. The check asks each agent which profiles it has
/// (nothing runs there) and fails naming what is missing, with the lab's remedy in a lab; the
/// run checks before its first point and stores nothing.
#[test]
fn issue_23_plan_check_asks_the_agents_for_the_profiles_the_plan_names() {
    let agent = Agent::start(&["--profile", "has-it=true"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, profiled_plan(&agent.addr, &["has-it", "lacks-it"])).expect("write");
    let plan = plan.to_str().expect("path");
    let out = linerate(&["plan", "check", plan], LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "agent {} has no profile 'lacks-it' (1 point) (it has: has-it)",
            agent.addr
        )),
        "{err}"
    );
    assert!(err.contains("linerate serve --profile NAME=COMMAND"), "{err}");
    // In a lab, the remedy is the lab's.
    let mut cmd = linerate_command();
    cmd.args(["plan", "check", plan]).env("LINERATE_LAB", "toe");
    let out = run_bounded(&mut cmd, LIMIT);
    assert!(stderr(&out).contains("linerate lab up --name toe"), "{}", stderr(&out));

    // The run checks before its first point: nothing runs, nothing is stored.
    let db = dir.path().join("r.db");
    let out = linerate(
        &["plan", "run", plan, "--db", db.to_str().expect("path")],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("has no profile 'lacks-it'"), "{}", stderr(&out));
    assert!(stored_points(db.to_str().expect("path")).is_empty());

    std::fs::write(dir.path().join("ok.toml"), profiled_plan(&agent.addr, &["has-it"])).expect("write");
    let out = linerate(
        &["plan", "check", dir.path().join("ok.toml").to_str().expect("path")],
        LIMIT,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!("profiles: agent {} has has-it: every one asked", agent.addr)),
        "{text}"
    );
}

/// `plan run --resume ID` without the `--quick` the campaign ran with mixed
/// full-length and quick points in one campaign. It is refused (a bad combination of flags,
/// status 2) with the command that resumes it as it ran.
#[test]
fn issue_23_a_resume_with_another_overlay_is_refused_with_the_original_flags() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, writes_plan("overlay", &agent.addr, "time = \"0.3s\"")).expect("write");
    let db = dir.path().join("r.db");
    let (plan, db) = (plan.to_str().expect("path"), db.to_str().expect("path"));
    let out = linerate(&["plan", "run", plan, "--quick", "--db", db], Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = campaign_of(&stderr(&out));
    let before = stored_points(db).len();

    let t = std::time::Instant::now();
    let out = linerate(&["plan", "run", plan, "--db", db, "--resume", &id], LIMIT);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ran its points with --quick"), "{err}");
    assert!(
        err.contains(&format!("linerate plan run {plan} --quick --db {db} --resume {id}")),
        "the original flags: {err}"
    );
    assert!(t.elapsed() < Duration::from_secs(20), "refused before any point ran");
    assert_eq!(stored_points(db).len(), before, "nothing ran");
    // As it ran, the resume is accepted (nothing is left to run).
    let out = linerate(&["plan", "run", plan, "--quick", "--db", db, "--resume", &id], LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("0 of 4 points to run"), "{}", stderr(&out));
}

const FLEET_PLAN: &str = r#"name = "fleet"
[defaults]
time = "6s"

[[test]]
name = "mesh"
kind = "tcp"
pattern = "mesh"
hosts = ["h2", "h3", "h4", "h5", "h6"]

[[test]]
name = "incast"
kind = "tcp"
pattern = "incast"
from = ["h2", "h3", "h4", "h5"]
to = ["h1"]
time = "10s"

[[test]]
name = "pairs"
kind = "rr"
pattern = "pairs"
pairs = [["h1", "h2"], ["h3", "h4"], ["h2", "h3"]]
different_nodes = true
"#;

#[test]
fn issue_24_plan_check_says_a_patterns_cells_rounds_and_time() {
    let out = check(FLEET_PLAN, &["--commands"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // 10 rounds of (6 s + 1 s to start each).
    assert!(
        text.contains("    mesh of 5 hosts: 20 cells in 10 rounds, about 70 s (each round 6 s + 1 s to start it)\n"),
        "{text}"
    );
    assert!(
        text.contains("    incast of 5 hosts: 4 cells in 1 round, about 11 s"),
        "{text}"
    );
    assert!(
        text.contains("    pairs of 4 hosts: 3 cells in 2 rounds, about 14 s (each round 6 s + 1 s to start it); fewer if --different-nodes"),
        "{text}"
    );
    // The point's own estimate is its rounds' (+ 1 s for the run, as every run).
    assert!(text.contains("test mesh (tcp): 1 point, 1 run, about 71 s\n"), "{text}");
    assert!(
        text.contains("linerate tcp h1 --pattern=incast --from=h2 --from=h3 --from=h4 --from=h5 --time=10s"),
        "{text}"
    );
    assert!(
        text.contains("linerate rr --time=6s --pattern=pairs --pair=h1,h2 --pair=h3,h4 --pair=h2,h3 --different-nodes"),
        "{text}"
    );
}

#[test]
fn issue_24_a_bad_pattern_is_a_plan_error_with_its_line() {
    let cases = [
        (
            FLEET_PLAN.replace("pattern = \"mesh\"", "pattern = \"ring\""),
            "line 8, column 1: 'ring' is not a pattern",
        ),
        (
            FLEET_PLAN.replace("to = [\"h1\"]", "to = [\"h1\", \"h6\"]"),
            "line 14, column 1: incast needs at least one sender",
        ),
        (
            FLEET_PLAN.replace("\"h5\", \"h6\"]", "\"h5\", \"h2\"]"),
            "line 8, column 1: 'h2' is named twice",
        ),
    ];
    for (plan, want) in cases {
        let out = check(&plan, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "want {want}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}
