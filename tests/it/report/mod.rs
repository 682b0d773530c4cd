//! `linerate report`: documents made by real runs on loopback (tcp, udp, rr, http and the three
//! sweeps), turned into one HTML page each and opened from file:// in headless Chromium with
//! networking off: every documented figure is there with data, nothing is logged to the console,
//! a screenshot is taken. The CSV of a figure holds the document's own numbers.

mod fleet;
mod latency;
mod layout;
mod store;

use crate::util::*;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(120);
/// One Chromium page load, generous for a loaded 2-core box.
const BROWSER_LIMIT: Duration = Duration::from_secs(90);

const CHROMIUM: Need = Need::Program {
    name: "chromium",
    package: "chromium",
};

/// Figures every single run has (docs/reports.md).
const EVERY_RUN: [&str; 3] = ["fig-cpu-timeline", "fig-cpu-per-cpu", "fig-irq-per-cpu"];

/// `linerate ARGS --json`, its document written to DIR/NAME.json.
fn document(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, Value) {
    let mut full = args.to_vec();
    full.push("--json");
    let out = linerate(&full, LIMIT);
    let v = json_of(&out);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &out.stdout).expect("write the document");
    (path, v)
}

/// `linerate report DOC -o DIR/NAME.html`; returns the page's path.
fn report(dir: &Path, doc: &Path, name: &str) -> PathBuf {
    let html = dir.join(format!("{name}.html"));
    let out = linerate(
        &[
            "report",
            doc.to_str().expect("utf-8 path"),
            "-o",
            html.to_str().expect("utf-8 path"),
        ],
        LIMIT,
    );
    if !out.status.success() {
        let _ = std::fs::copy(doc, format!("/tmp/report-fail-{name}.json"));
    }
    assert!(out.status.success(), "report failed: {}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), html.display().to_string());
    html
}

/// Runs chromium headless on `url` with networking off and `args`, in its own process group,
/// which is killed when it is done or past [`BROWSER_LIMIT`]. Returns (stdout, stderr).
fn chromium(profile: &Path, url: &str, args: &[&str]) -> (String, String) {
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        // No name resolves: a request to any host fails at once (and would log to the console).
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let child = cmd.spawn().expect("start chromium");
    let group = child.id() as i32;
    let started = Instant::now();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| wait_bounded(child, BROWSER_LIMIT)));
    // Renderer, GPU and zygote processes are in the group too: stop them all.
    // SAFETY: kill(2) on a process group this test created; no memory is involved.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let out = result.unwrap_or_else(|_| panic!("chromium ran past {:?}", started.elapsed()));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `d` attributes of the data paths inside the element with id `id` (an `<svg>`).
fn data_paths<'a>(dom: &'a str, id: &str) -> Vec<&'a str> {
    let Some(start) = dom.find(&format!("id=\"{id}\"")) else {
        return Vec::new();
    };
    let end = dom[start..].find("</svg>").map_or(dom.len(), |e| start + e);
    let svg = &dom[start..end];
    svg.match_indices("class=\"data\" d=\"")
        .map(|(i, m)| {
            let rest = &svg[i + m.len()..];
            &rest[..rest.find('"').unwrap_or(0)]
        })
        .collect()
}

/// How many numbers a path's data holds.
fn numbers(d: &str) -> usize {
    d.split(|c: char| c.is_ascii_alphabetic() || c == ' ' || c == ',')
        .filter(|t| !t.is_empty())
        .count()
}

/// Opens the page in Chromium and checks it: the figures `ids` each with a data path of
/// several points, no console message, a screenshot written. One Chromium does both: it dumps
/// the DOM it built and photographs the page in the same run. Returns the DOM, for checks of what
/// the page shows.
fn check_in_browser(dir: &Path, html: &Path, ids: &[&str]) -> String {
    let text = std::fs::read_to_string(html).expect("read the page");
    assert!(text.len() < 1_000_000, "the page is {} bytes", text.len());
    for fetch in [" src=", "<link", "@import", "url(http", "href=\"http"] {
        assert!(!text.contains(fetch), "the page would fetch something: {fetch}");
    }
    let url = format!("file://{}", html.display());
    let shot = dir.join("x.png");
    let (dom, log) = chromium(
        &dir.join("profile-dom"),
        &url,
        &[
            "--dump-dom",
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000",
        ],
    );
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom.contains("<h1>"),
        "no page in the DOM: {}",
        &dom[..dom.len().min(500)]
    );
    for id in ids {
        let paths = data_paths(&dom, id);
        assert!(!paths.is_empty(), "figure {id} missing or without data paths");
        assert!(
            paths.iter().any(|d| numbers(d) >= 4),
            "figure {id}: no data path with several points: {paths:?}"
        );
    }
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot of {size} bytes; chromium said: {log}");
    dom
}

/// In a [`Case`]'s arguments: the agent's control address, and its HTTP server's.
const AGENT: &str = "{agent}";
const HTTP: &str = "{http}";

/// One report test: what differs from kind to kind.
struct Case<'a> {
    /// Names the document and the page.
    name: &'a str,
    /// Flags of the agent the run goes to (`--http-port 0`).
    agent: &'a [&'a str],
    /// The command, `--json` left out; [`AGENT`] and [`HTTP`] stand for the agent's addresses.
    args: &'a [&'a str],
    /// The figures the page must show, each with data.
    figures: &'a [&'a str],
}

/// What a round made, for the checks a test adds.
struct Round {
    /// The document `--json` printed.
    doc: Value,
    /// The page as written, and as Chromium's DOM has it.
    page: String,
    dom: String,
    /// Holds the files until the test ends.
    _dir: tempfile::TempDir,
}

/// Starts the case's agent, makes its document with a real run, the page from it, and checks the
/// page in the browser ([`check_in_browser`]); None (skipped, the reason printed) without
/// Chromium.
fn round(case: Case) -> Option<Round> {
    if !can_run(&[CHROMIUM]) {
        return None;
    }
    let agent = Agent::start(case.agent);
    let http = agent.http_addr.clone().unwrap_or_default();
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace(AGENT, &agent.addr).replace(HTTP, &http))
        .collect();
    let dir = tempfile::tempdir().expect("temporary directory");
    let (doc, v) = document(
        dir.path(),
        case.name,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let html = report(dir.path(), &doc, case.name);
    let dom = check_in_browser(dir.path(), &html, case.figures);
    Some(Round {
        doc: v,
        page: std::fs::read_to_string(&html).expect("read the page"),
        dom,
        _dir: dir,
    })
}

fn with_every_run<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    EVERY_RUN.iter().chain(ids).copied().collect()
}

#[test]
fn a_tcp_report_opens_with_its_figures() {
    round(Case {
        name: "tcp",
        agent: &[],
        args: &["tcp", AGENT, "-t", "3", "-P", "2"],
        figures: &with_every_run(&["fig-timeline"]),
    });
}

/// The page's CSP allowed `script-src 'unsafe-inline'`, so an injected script would
/// have run. Now it names the page's own script by hash: Chromium runs that one (it marks the
/// page `class="js"`, and a blocked script would log a CSP error to the console, which
/// [`check_in_browser`] refuses), and the policy allows no other.
#[test]
fn issue_22_the_reports_csp_allows_only_its_own_script_and_chromium_runs_it() {
    let Some(r) = round(Case {
        name: "tcp-csp",
        agent: &[],
        args: &["tcp", AGENT, "-t", "3", "-P", "2"],
        figures: &with_every_run(&["fig-timeline"]),
    }) else {
        return;
    };
    let csp = r
        .page
        .split("Content-Security-Policy\" content=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the page has a CSP");
    let scripts = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src"))
        .expect("a script-src directive");
    assert!(!scripts.contains("unsafe-inline"), "{csp}");
    assert!(scripts.starts_with("script-src 'sha256-"), "{csp}");
    assert!(
        r.dom.contains("<html lang=\"en\" class=\"js\">"),
        "the page's script did not run: {}",
        &r.dom[..r.dom.len().min(300)]
    );
}

#[test]
fn a_udp_report_opens_with_its_figures() {
    round(Case {
        name: "udp",
        agent: &[],
        args: &["udp", AGENT, "-t", "3", "--gap", "50"],
        figures: &with_every_run(&[
            "fig-timeline",
            "fig-udp-interarrival",
            "fig-udp-loss",
            "fig-udp-owd-sequence",
            "fig-udp-owd-histogram",
        ]),
    });
}

#[test]
fn an_rr_report_opens_with_its_figures() {
    round(Case {
        name: "rr",
        agent: &[],
        args: &["rr", AGENT, "-t", "3"],
        figures: &with_every_run(&["fig-timeline", "fig-rr-histogram"]),
    });
}

/// An http run of 4 users, ramped up over 1 s, 2 s long, against the agent's HTTP server.
const HTTP_RUN: [&str; 10] = [
    "http",
    "http://{http}/bytes/2000",
    "--users",
    "4",
    "--ramp",
    "1s",
    "-d",
    "2s",
    "--agent",
    AGENT,
];

#[test]
fn an_http_report_opens_with_its_figures() {
    let Some(r) = round(Case {
        name: "http",
        agent: &["--http-port", "0"],
        args: &HTTP_RUN,
        figures: &with_every_run(&[
            "fig-http-rate",
            "fig-http-throughput",
            "fig-http-response-time",
            "fig-http-connections",
            "fig-http-nic",
        ]),
    }) else {
        return;
    };
    // Each interval's connections by outcome, counted with their attempts: never more
    // outcomes than attempts (the rest were still connecting when the interval was drawn).
    for i in r.doc["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["kind"] == "http")
    {
        let (tried, ok, failed) = (
            f(i, "/connections_per_second"),
            f(i, "/connections_successful_per_second"),
            f(i, "/connections_unsuccessful_per_second"),
        );
        assert!(ok + failed <= tried + 1e-6, "{i}");
        // The interval's percentiles, from bins 12.5 % wide: ordered, and the p99 not past the
        // longest by more than half a bin.
        if u(i, "/responses") > 0 {
            let (p50, p99, max) = (
                f(i, "/response_time_p50_us"),
                f(i, "/response_time_p99_us"),
                f(i, "/response_time_max_us"),
            );
            assert!(0.0 < p50 && p50 <= p99 && p99 <= max * 1.0625 + 1.0, "{i}");
        }
    }
}

#[test]
fn a_udp_sweep_report_opens_with_its_curves() {
    round(Case {
        name: "udp-sweep",
        agent: &[],
        args: &["udp", AGENT, "--sizes", "64,512", "--gaps", "10,20,50", "-n", "20000"],
        figures: &["fig-udp-sweep-rate", "fig-udp-sweep-loss", "fig-udp-sweep-cpu"],
    });
}

#[test]
fn an_rr_sweep_report_opens_with_its_fit() {
    let Some(r) = round(Case {
        name: "rr-sweep",
        agent: &[],
        args: &["rr", AGENT, "--sizes", "64,1000,8000", "-t", "0.3", "--expect", "10G"],
        figures: &["fig-rr-sweep"],
    }) else {
        return;
    };
    // The fitted line's slope and intercept are written on the figure.
    let slope = f(&r.doc, "/summary/fit/slope_us_per_byte");
    assert!(
        r.page.contains(&format!("slope {slope:.6} µs/byte")),
        "no slope on the figure"
    );
    assert!(
        r.page.contains("expected slope 0.000800 µs/byte"),
        "no expected slope (8 / 10 Gbit/s)"
    );
}

#[test]
fn an_http_sweep_report_opens_with_its_optimum() {
    let Some(r) = round(Case {
        name: "http-sweep",
        agent: &["--http-port", "0"],
        args: &[&["http", "http://{http}/bytes/2000"][..], &USER_SWEEP].concat(),
        figures: &["fig-http-sweep", "fig-http-sweep-response-time"],
    }) else {
        return;
    };
    let users = u(&r.doc, "/summary/optimum/users");
    assert!(r.dom.contains(&format!("optimum {users} users")), "optimum not marked");
}

/// The rows of a CSV file after its header, split on commas (the tests' names hold none).
fn csv_rows(path: &Path) -> (String, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let head = lines.next().expect("header").to_string();
    (
        head,
        lines.map(|l| l.split(',').map(str::to_string).collect()).collect(),
    )
}

#[test]
fn a_figures_csv_holds_the_documents_numbers() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("temporary directory");
    let (doc, v) = document(dir.path(), "tcp", &["tcp", &agent.addr, "-t", "3", "-P", "2"]);
    let csv = dir.path().join("csv");
    let (svg, all) = (dir.path().join("svg"), dir.path().join("all.svg"));
    let out = linerate(
        &[
            "report",
            doc.to_str().expect("utf-8"),
            "--csv",
            csv.to_str().expect("utf-8"),
            "--svg",
            svg.to_str().expect("utf-8"),
            "-o",
            all.to_str().expect("utf-8"),
        ],
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Every path written is printed, and is there.
    let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(printed[0], all.display().to_string());
    for id in ["fig-timeline", "fig-cpu-timeline", "fig-cpu-per-cpu", "fig-irq-per-cpu"] {
        for path in [svg.join(format!("{id}.svg")), csv.join(format!("{id}.csv"))] {
            assert!(
                printed.contains(&path.display().to_string()),
                "{} not printed",
                path.display()
            );
        }
        let one = std::fs::read_to_string(svg.join(format!("{id}.svg"))).expect("svg file");
        assert!(one.starts_with(&format!("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\"")));
    }
    let stacked = std::fs::read_to_string(&all).expect("the stacked svg");
    let figures = printed.iter().filter(|p| p.ends_with(".csv")).count();
    assert_eq!(
        stacked.matches("<svg ").count(),
        1 + figures,
        "one outer svg around each figure's"
    );
    let (head, rows) = csv_rows(&csv.join("fig-timeline.csv"));
    assert_eq!(head, "series,time since start (s),\"throughput, received (Mbit/s)\"");
    let received: Vec<&Value> = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["kind"] == "stream" && i["side"] == "received")
        .collect();
    assert!(received.len() >= 4, "2 streams over 2 s");
    for stream in [0, 1] {
        let want: Vec<(f64, f64)> = received
            .iter()
            .filter(|i| i["stream"] == stream)
            .map(|i| {
                (
                    (f(i, "/start_ns") / 1e9 + f(i, "/end_ns") / 1e9) / 2.0,
                    f(i, "/bits_per_second") / 1e6,
                )
            })
            .collect();
        let got: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r[0] == format!("stream {stream}"))
            .map(|r| (r[1].parse().expect("x"), r[2].parse().expect("y")))
            .collect();
        assert_eq!(got, want, "stream {stream}");
    }
    // The total is the streams' sum at each interval.
    let totals: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] == "total")
        .map(|r| r[2].parse().expect("y"))
        .collect();
    let streams: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] == "stream 0")
        .map(|r| r[2].parse().expect("y"))
        .collect();
    let ones: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] == "stream 1")
        .map(|r| r[2].parse().expect("y"))
        .collect();
    assert_eq!(totals.len(), streams.len());
    for ((t, a), b) in totals.iter().zip(&streams).zip(&ones) {
        assert!((t - (a + b)).abs() <= 1e-9 * t.abs().max(1.0), "total {t} != {a} + {b}");
    }
    // Per CPU: the bars are the receiving side's per-CPU busy figures, in CPU order.
    let (head, rows) = csv_rows(&csv.join("fig-cpu-per-cpu.csv"));
    assert!(head.starts_with("series,CPU,CPU end,busy (%)"), "{head}");
    let want: Vec<f64> = v["summary"]["received"]["cpu"]["per_cpu"]
        .as_array()
        .expect("per_cpu")
        .iter()
        .map(|c| f(c, "/busy"))
        .collect();
    let got: Vec<f64> = rows
        .iter()
        .filter(|r| r[0].starts_with("receive side"))
        .map(|r| r[3].parse().expect("busy"))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_report_arguments_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"not\": \"a result\"}").expect("write");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"test\": \"tcp\", ").expect("write");
    let out_html = dir.path().join("r.html");
    let no_db = dir.path().join("none").join("r.db");
    let no_db = no_db.to_str().expect("utf-8");
    let (junk, broken, html) = (
        junk.to_str().expect("utf-8"),
        broken.to_str().expect("utf-8"),
        out_html.to_str().expect("utf-8"),
    );
    // A source that cannot be read is a runtime error (1); flags that ask for nothing or for a
    // format linerate does not write are usage errors (2).
    for (args, says, code) in [
        (vec!["report", "/nonexistent/x.json", "-o", html], "cannot read", 1),
        (vec!["report", junk, "-o", html], "no \"test\" field", 1),
        (vec!["report", broken, "-o", html], "not JSON", 1),
        (vec!["report", junk], "nothing to write", 2),
        (vec!["report", junk, "-o", "x.png"], ".html or .svg", 2),
        (vec!["report", "42", "--db", no_db, "-o", html], "results database", 1),
        (vec!["report", "7..8", "--db", no_db, "-o", html], "side A '7'", 1),
    ] {
        let out = linerate(&args, Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!out_html.exists(), "nothing written on an error");
}

#[test]
fn issue_17_loss_along_the_sequence_adds_up_and_is_what_the_loss_figure_draws() {
    let agent = Agent::start(&[]);
    let dir = tempfile::tempdir().expect("temporary directory");
    // Unpaced large datagrams: loopback usually drops some.
    let (doc, v) = document(
        dir.path(),
        "udp",
        &["udp", &agent.addr, "-t", "1", "--gap", "0", "-l", "1400"],
    );
    let along = &v["summary"]["along_sequence"];
    assert_eq!(along.as_array().map(Vec::len), Some(1), "one receiving stream: {along}");
    let p = &along[0];
    let width = u(p, "/width_datagrams");
    assert!(width.is_power_of_two());
    let lost: Vec<u64> = p["lost"]
        .as_array()
        .expect("lost")
        .iter()
        .map(|n| n.as_u64().expect("count"))
        .collect();
    assert!(!lost.is_empty() && lost.len() <= 64);
    // Counted up to the sender's count when its end markers came (then equal), else up to the
    // highest number seen: never more than the summary's loss.
    let total: u64 = lost.iter().sum();
    assert!(total <= u(&v, "/summary/lost"), "{total} along the sequence");
    // A stretch with arrivals has a delay; one with none lost all of its datagrams.
    for (i, d) in p["delay_mean_us"].as_array().expect("delays").iter().enumerate() {
        if d.is_null() {
            assert!(lost[i] > 0, "stretch {i}: nothing arrived and nothing lost");
        } else {
            assert!(d.as_f64().expect("µs") >= 0.0);
        }
    }
    let csv = dir.path().join("csv");
    let out = linerate(
        &[
            "report",
            doc.to_str().expect("utf-8"),
            "--csv",
            csv.to_str().expect("utf-8"),
        ],
        LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (head, rows) = csv_rows(&csv.join("fig-udp-loss.csv"));
    if total > 0 {
        assert!(head.contains("sequence number (datagram) end"), "{head}");
        let drawn: Vec<u64> = rows
            .iter()
            .map(|r| r[3].parse::<f64>().expect("count") as u64)
            .collect();
        assert_eq!(drawn, lost);
    } else {
        assert!(rows.iter().all(|r| r[2] == "0"), "nothing lost, a zero line: {rows:?}");
    }
    assert!(csv.join("fig-udp-owd-sequence.csv").exists());
}
