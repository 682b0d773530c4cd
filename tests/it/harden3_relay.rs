//! A `from` agent's answer bounded by what its test
//! can fill and checked as a direct client checks an agent's report; the far address judged in
//! its canonical form; and a far end that is no agent given neither a proof nor a port probe.
//! The lying `from` agents are fakes that speak the protocol by hand (tests/harness/fake_agent.rs).

use crate::fake_agent::*;
use crate::kinds::*;
use crate::util::*;
use serde_json::Value;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(90);

/// `linerate ARGS` with the fleet's secret.
fn controller(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env("LINERATE_SECRET", FLEET_SECRET);
    cmd
}

/// The cell of `m` from `from`.
fn cell_from<'a>(m: &'a Value, from: &str) -> &'a Value {
    cells(m)
        .iter()
        .find(|c| c["from"] == from)
        .unwrap_or_else(|| panic!("no cell from {from}: {m}"))
}

/// Item 3: a `from` agent that answers with a 126 MB `relay_result`. On main the controller
/// read the whole frame (and parsed it when it was a document: 3.18 GB, exit 0); now the
/// frame is refused at its length prefix, which passes what a 1 s TCP test can fill.
#[test]
fn issue_39_a_huge_relay_result_is_refused_at_its_length_and_the_cell_fails() {
    if !can_run(&[PEAK_RSS]) {
        return;
    }
    let to = fleet_agent(&[]);
    const HUGE: u32 = 126_000_000;
    let fake = FakeAgent::start(
        FLEET_SECRET,
        Arc::new(|s: &mut TcpStream, _relay: &Value| {
            // Not a document: enough to be buffered (on main) and refused (now); the sender
            // stops at the first failed write, when the controller closes.
            let _ = s.write_all(&HUGE.to_be_bytes());
            let chunk = vec![b'x'; 1 << 20];
            let mut sent = 0u64;
            while sent < u64::from(HUGE) && s.write_all(&chunk).is_ok() {
                sent += chunk.len() as u64;
            }
        }),
    );
    // An honest cell beside it, which stands: the matrix is partial (exit 3), not failed.
    let honest = fleet_agent(&[]);
    let from = fake.addr.to_string();
    let (pair, beside) = (format!("{from},{}", to.addr), format!("{},{}", honest.addr, to.addr));
    let cmd = controller(&[
        "tcp",
        "--json",
        "--no-store",
        "--pattern",
        "pairs",
        "--pair",
        &pair,
        "--pair",
        &beside,
        "-t",
        "1",
    ]);
    let (out, peak_kib) = run_with_peak_rss(&cmd, LIMIT);
    eprintln!("controller peak: {} MiB, exit {:?}", peak_kib >> 10, out.status.code());
    let m = json_with_status(&out, 3);
    let fine = cell_from(&m, &honest.addr);
    assert!(
        fine["error"].is_null() && f(fine, "/value") > 0.0,
        "the honest cell stands: {fine}"
    );
    let cell = cell_from(&m, &from);
    let error = cell["error"]
        .as_str()
        .unwrap_or_else(|| panic!("the cell failed: {cell}"));
    assert!(
        error.contains("126000000 bytes exceeds") && error.contains("limit"),
        "says why: {error}"
    );
    assert!(cell["value"].is_null(), "no figure: {cell}");
    assert!(
        peak_kib < 100 << 10,
        "the controller peaked at {} MiB reading a 126 MB answer",
        peak_kib >> 10
    );
}

/// Item 4: cells a `from` agent changed on the way back (a real run passed through a fake)
/// are refused, each with its reason, while the honest cell beside them stands.
#[test]
fn issue_39_relayed_cells_that_cannot_be_true_are_refused_and_the_others_stand() {
    let (real, to) = (fleet_agent(&[]), fleet_agent(&[]));
    let real_addr = real.addr.parse().expect("an address");
    let honest = FakeAgent::proxy(FLEET_SECRET, real_addr, |_| {});
    let absurd = FakeAgent::proxy(FLEET_SECRET, real_addr, move |m| {
        m["result"]["summary"]["received"]["bits_per_second"] = 1.7e308.into();
    });
    let replayed = FakeAgent::proxy(FLEET_SECRET, real_addr, move |m| {
        let r = &mut m["result"];
        let an_hour_ago = r["started_unix_ms"].as_u64().expect("a start") - 3_600_000;
        r["started_unix_ms"] = an_hour_ago.into();
    });
    let other = FakeAgent::proxy(FLEET_SECRET, real_addr, move |m| {
        m["result"]["options"]["streams"] = 7.into();
    });
    // Far more received than sent, the rate made to agree with the bytes.
    let inflated = FakeAgent::proxy(FLEET_SECRET, real_addr, move |m| {
        let sent = m["result"]["summary"]["sent"]["bytes"].as_u64().expect("bytes");
        let received = &mut m["result"]["summary"]["received"];
        // Past what may be in flight between the two ends' windows (a quarter, 64 MiB a stream).
        let bytes = sent * 2 + (128 << 20);
        let seconds = received["seconds"].as_f64().expect("seconds");
        received["bytes"] = bytes.into();
        received["bits_per_second"] = (bytes as f64 * 8.0 / seconds).into();
    });
    let mut args = vec!["tcp", "--json", "--no-store", "--pattern", "pairs", "-t", "1"];
    let pairs: Vec<String> = [&honest, &absurd, &replayed, &other, &inflated]
        .iter()
        .map(|f| format!("{},{}", f.addr, to.addr))
        .collect();
    for p in &pairs {
        args.extend(["--pair", p.as_str()]);
    }
    let out = run_bounded(&mut controller(&args), LIMIT);
    let m = json_with_status(&out, 3);
    let fine = cell_from(&m, &honest.addr.to_string());
    assert!(fine["error"].is_null(), "the honest cell stands: {fine}");
    assert!(f(fine, "/value") > 0.0, "and has its figure: {fine}");
    for (fake, says) in [
        (&absurd, "not a possible figure"),
        (&replayed, "before the request was sent"),
        (&other, "another test than the one asked"),
        (&inflated, "received, more than the"),
    ] {
        let c = cell_from(&m, &fake.addr.to_string());
        let error = c["error"].as_str().unwrap_or_else(|| panic!("refused: {c}"));
        assert!(error.contains(says) && error.contains("was refused"), "{says}: {error}");
        assert!(c["value"].is_null() && c["result"].is_null(), "nothing of it kept: {c}");
    }
    assert_eq!(m["failed"].as_array().expect("failed").len(), 4, "{}", m["failed"]);
    assert!(m["partial"].as_bool().expect("partial"), "the run is partial");
}

/// Item 10: the far address in an IPv4-mapped form is judged as its IPv4 address: `0.0.0.0`
/// (this host, where on main the test ran against the local agent), a multicast group and the
/// broadcast address are refused.
#[test]
fn issue_39_a_relay_refuses_mapped_forms_of_this_host_a_group_and_broadcast() {
    let (from, local) = (fleet_agent(&[]), fleet_agent(&[]));
    let port = port_of(&local.addr);
    for ip in ["::ffff:0.0.0.0", "::ffff:224.0.0.1", "::ffff:255.255.255.255"] {
        let to = format!("[{ip}]:{port}");
        let out = with_fleet_secret(
            &["tcp", "--json", "--no-store", "--from", &from.addr, &to, "-t", "1"],
            Duration::from_secs(30),
        );
        let err = stderr(&out);
        assert!(!out.status.success(), "{to}: refused, not run: {err}");
        assert!(err.contains("not one agent's address"), "{to}: says why: {err}");
    }
}

/// Item 11: a relay sends a far end that has not shown itself an agent no proof of the secret:
/// its first bytes are the plain preamble, and the error says no agent of the fleet answered
/// (the timing is in tests/timed/harden3_relay.rs).
#[test]
fn issue_39_a_relay_sends_no_proof_to_a_listener_that_is_no_agent() {
    let from = fleet_agent(&[]);
    let (silent, heard, stop) = not_an_agent(false);
    let _stop = crate::attack::StopOnDrop(&stop);
    let to = silent.to_string();
    let out = with_fleet_secret(
        &["tcp", "--json", "--no-store", "--from", &from.addr, &to, "-t", "1"],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no linerate agent of this fleet answered"),
        "one answer for whatever is there: {err}"
    );
    poll_until(Duration::from_secs(10), "the listener kept what it heard", || {
        !heard.lock().expect("lock").is_empty()
    });
    for got in heard.lock().expect("lock").iter() {
        assert_eq!(
            got.as_slice(),
            &crate::attack::preamble()[..],
            "the plain preamble, no proof: {got:?}"
        );
    }
}

/// Item 4, a single `--from` run: a document that cannot be true is refused with its reason
/// and the run exits 3 (a run the far end made whose figures are not taken), as a matrix does.
#[test]
fn issue_39_a_single_relayed_run_that_cannot_be_true_exits_3_with_its_reason() {
    let (real, to) = (fleet_agent(&[]), fleet_agent(&[]));
    let absurd = FakeAgent::proxy(FLEET_SECRET, real.addr.parse().expect("an address"), move |m| {
        m["result"]["summary"]["received"]["bits_per_second"] = 1.7e308.into();
    });
    let out = run_bounded(
        &mut controller(&[
            "tcp",
            "--no-store",
            "--from",
            &absurd.addr.to_string(),
            &to.addr,
            "-t",
            "1",
        ]),
        LIMIT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "partial: {err}");
    assert!(
        err.contains("was refused") && err.contains("not a possible figure"),
        "says why: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}
