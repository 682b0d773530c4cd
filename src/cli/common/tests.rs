use crate::cli::{Cli, Command};
use clap::Parser;
use linerate_core::spec::Timing;

fn parse(args: &[&str]) -> Result<Command, clap::Error> {
    let mut full = vec!["linerate"];
    full.extend_from_slice(args);
    Cli::try_parse_from(full).map(|c| c.command)
}

/// (-P, client CPUs, peer CPUs, -n, -t seconds, warm-up seconds, interval seconds, json, targets)
type Shared = (
    u16,
    Vec<usize>,
    Vec<usize>,
    Option<u64>,
    Option<f64>,
    f64,
    f64,
    bool,
    Vec<String>,
);

fn shared(cmd: Command) -> Shared {
    let (h, s, r, o) = match cmd {
        Command::Tcp(a) => (a.hosts, a.streams, a.timing, a.output),
        Command::Udp(a) => (a.hosts, a.streams, a.timing, a.common.output),
        Command::Rr(a) => (a.hosts, a.streams, a.timing, a.common.output),
        other => panic!("parsed as {other:?}"),
    };
    let targets = h
        .targets()
        .expect("resolve")
        .iter()
        .map(|t| t.addr.to_string())
        .collect();
    (
        s.count().expect("-P"),
        s.cpus.list(),
        s.peer_cpus(),
        r.count,
        r.time.map(|t| t.as_secs_f64()),
        r.warmup.as_secs_f64(),
        r.interval.interval.as_secs_f64(),
        o.json,
        targets,
    )
}

#[test]
fn every_test_kind_takes_the_shared_flags_alike() {
    for kind in ["tcp", "udp", "rr"] {
        let args = [
            kind,
            "127.0.0.1",
            "-p",
            "6000",
            "-P",
            "3",
            "--cpus",
            "0-1",
            "--peer-cpus=1",
            "-t",
            "1500ms",
            "--warmup",
            "0.5",
            "-i",
            "250ms",
            "--json",
        ];
        let s = shared(parse(&args).expect(kind));
        assert_eq!(
            s,
            (
                3,
                vec![0, 1],
                vec![1],
                None,
                Some(1.5),
                0.5,
                0.25,
                true,
                vec!["127.0.0.1:6000".to_string()]
            ),
            "{kind}"
        );
        let s = shared(parse(&[kind, "127.0.0.1", "--parallel=2", "-n", "7", "--interval", "0"]).expect(kind));
        assert_eq!((s.0, s.3, s.4, s.6, s.7), (2, Some(7), None, 0.0, false), "{kind}");
        let e = parse(&[kind, "h", "-n", "5", "-t", "3"])
            .expect_err("-n with -t")
            .to_string();
        assert!(e.contains("cannot be used with"), "{kind}: {e}");
        let e = parse(&[kind, "h", "--warmup", "soon"])
            .expect_err("bad time")
            .to_string();
        assert!(e.contains("'soon' is not a time"), "{kind}: {e}");
    }
}

#[test]
fn streams_are_checked_once_for_every_kind() {
    for kind in ["tcp", "udp", "rr"] {
        let s = match parse(&[kind, "h", "-P", "100000"]).expect(kind) {
            Command::Tcp(a) => a.streams,
            Command::Udp(a) => a.streams,
            Command::Rr(a) => a.streams,
            other => panic!("parsed as {other:?}"),
        };
        let e = s.count().expect_err("too many").to_string();
        assert_eq!(e, "-P must be between 1 and 1024 streams, not 100000");
    }
}

#[test]
fn time_and_cooldown_mean_the_same_in_every_kind() {
    for kind in ["tcp", "udp", "rr"] {
        let run = |args: &[&str]| match parse(args).expect(kind) {
            Command::Tcp(a) => a.timing,
            Command::Udp(a) => a.timing,
            Command::Rr(a) => a.timing,
            other => panic!("parsed as {other:?}"),
        };
        let r = run(&[kind, "h", "--time=2s", "--cooldown", "500ms"]);
        assert_eq!(
            (r.time.map(|t| t.as_secs_f64()), r.cooldown.seconds()),
            (Some(2.0), 0.5),
            "{kind}"
        );
        let r = run(&[kind, "h", "-t", "10", "--cooldown=1"]);
        assert_eq!(
            (r.time.map(|t| t.as_secs_f64()), r.cooldown.seconds()),
            (Some(10.0), 1.0),
            "{kind}"
        );
        assert_eq!(run(&[kind, "h"]).cooldown.seconds(), 0.0, "{kind}");
        let e = parse(&[kind, "h", "--cooldown", "soon"])
            .expect_err("bad time")
            .to_string();
        assert!(e.contains("'soon' is not a time"), "{kind}: {e}");
    }
    let Command::Http(a) = parse(&["http", "http://h/", "--time", "3s", "--cooldown", "1s"]).expect("http") else {
        panic!("not http")
    };
    assert_eq!((a.timing.time.as_secs_f64(), a.timing.cooldown.seconds()), (3.0, 1.0));
}

#[test]
fn http_takes_cpus_interval_json_and_times() {
    let Command::Http(a) = parse(&[
        "http",
        "http://127.0.0.1/",
        "--cpus",
        "1",
        "-i",
        "2",
        "--json",
        "--ramp",
        "1.5",
        "--think",
        "20ms",
        "-d",
        "4m",
        "--timeout",
        "500ms",
    ])
    .expect("valid") else {
        panic!("not http")
    };
    assert_eq!(
        (
            a.cpus.list(),
            a.timing.interval.interval.as_secs_f64(),
            a.common.output.json
        ),
        (vec![1], 2.0, true)
    );
    let s = a.spec_for(1).expect("valid");
    assert_eq!(
        (s.timing, s.think_ms, s.timeout_ms),
        (
            Timing {
                interval_seconds: 2.0,
                ..Timing::ramp(1.5, 240.0)
            },
            20.0,
            500
        )
    );
}

#[test]
fn connect_timeout_and_doctor_rtt_are_times() {
    let Command::Tcp(a) = parse(&["tcp", "h", "--connect-timeout", "250ms"]).expect("valid") else {
        panic!("not tcp")
    };
    assert_eq!(a.reach.options().expect("ok").connect_timeout.as_millis(), 250);
    let Command::Doctor(d) = parse(&["doctor", "--rtt", "0.2"]).expect("valid") else {
        panic!("not doctor")
    };
    assert_eq!(d.rtt.map(|t| t.0.as_millis()), Some(200), "a bare number is seconds");
}

fn repeat_args(cmd: Command) -> super::RepeatArgs {
    match cmd {
        Command::Tcp(a) => a.repeat,
        Command::Udp(a) => a.common.repeat,
        Command::Rr(a) => a.common.repeat,
        Command::Http(a) => a.common.repeat,
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn issue_15_every_test_kind_takes_the_repeat_flags_alike() {
    use linerate_core::result::{RepeatPolicy, Runs};
    for (kind, host) in [("tcp", "h"), ("udp", "h"), ("rr", "h"), ("http", "http://h/")] {
        let policy = |args: &[&str]| {
            let mut full = vec![kind, host];
            full.extend_from_slice(args);
            repeat_args(parse(&full).expect(kind)).policy()
        };
        assert_eq!(policy(&[]).expect("no --repeat"), None, "{kind}");
        assert_eq!(
            policy(&["--repeat", "5", "--best=3", "--pause", "250ms"]).expect(kind),
            Some(RepeatPolicy {
                runs: Runs::Fixed { runs: 5 },
                pause_seconds: 0.25,
                best: Some(3)
            }),
            "{kind}"
        );
        assert_eq!(
            policy(&["--repeat=auto", "--ci", "1.5%", "--min-runs", "4", "--max-runs=8"]).expect(kind),
            Some(RepeatPolicy {
                runs: Runs::Auto {
                    ci_percent: 1.5,
                    min_runs: 4,
                    max_runs: 8
                },
                pause_seconds: 1.0,
                best: None
            }),
            "{kind}"
        );
        let auto = policy(&["--repeat", "AUTO", "--ci", "3"]).expect(kind).expect("auto");
        assert_eq!(
            auto.runs,
            Runs::Auto {
                ci_percent: 3.0,
                min_runs: 3,
                max_runs: 10
            },
            "defaults: 3 to 10 runs"
        );
        assert_eq!(
            policy(&["--repeat", "2", "--repeat", "4"])
                .expect("last one wins")
                .map(|p| p.runs),
            Some(Runs::Fixed { runs: 4 })
        );
        let err = |args: &[&str]| policy(args).expect_err("refused").to_string();
        assert_eq!(err(&["--pause", "2s"]), "--pause needs --repeat N or --repeat auto");
        assert_eq!(
            err(&["--repeat", "3", "--max-runs", "5"]),
            "--max-runs goes with --repeat auto, not --repeat 3"
        );
        assert!(
            err(&["--repeat", "0"]).contains("--repeat must be between 1 and"),
            "{kind}"
        );
        let clap = |args: &[&str]| {
            let mut full = vec![kind, host];
            full.extend_from_slice(args);
            parse(&full).expect_err("refused by the parser").to_string()
        };
        assert!(clap(&["--repeat", "-2"]).contains("must be positive, got -2"), "{kind}");
        assert!(clap(&["--ci", "two"]).contains("'two' is not a percentage"), "{kind}");
        assert!(
            clap(&["--pause", "-1s"]).contains("must be positive, got -1s"),
            "{kind}"
        );
    }
}

/// Every test command, with a target where it takes one.
const TEST_COMMANDS: [&[&str]; 5] = [
    &["tcp", "h"],
    &["udp", "h"],
    &["rr", "h"],
    &["http", "http://h/"],
    &["quick"],
];

/// A test command's output flags.
fn output_of(cmd: Command) -> super::OutputArgs {
    match cmd {
        Command::Tcp(a) => a.output,
        Command::Udp(a) => a.common.output,
        Command::Rr(a) => a.common.output,
        Command::Http(a) => a.common.output,
        Command::Quick(a) => a.output,
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn every_test_kind_takes_the_store_flags_alike() {
    for args in TEST_COMMANDS {
        let mut full = args.to_vec();
        full.extend(["--label", "nic=x2", "--db", "/tmp/r.db", "--label=mtu=9000"]);
        let s = output_of(parse(&full).expect("valid")).store;
        assert_eq!(
            s.labels,
            vec![("nic".into(), "x2".into()), ("mtu".into(), "9000".into())],
            "{args:?}: repeatable, in order"
        );
        assert_eq!(s.db.db.as_deref(), Some(std::path::Path::new("/tmp/r.db")));
        assert!(!s.no_store);
        let mut full = args.to_vec();
        full.push("--no-store");
        assert!(parse(&full).is_ok(), "{args:?}");
        let mut full = args.to_vec();
        full.extend(["--label", "nic"]);
        let e = parse(&full).expect_err("no =").to_string();
        assert!(e.contains("'nic' is not a label (KEY=VALUE"), "{e}");
        let mut full = args.to_vec();
        full.extend(["--no-store", "--label", "a=b"]);
        assert!(parse(&full).is_err(), "{args:?}: --no-store with --label");
    }
}

#[test]
fn issue_23_brief_is_an_output_flag_of_every_test_command() {
    for args in TEST_COMMANDS {
        let output = |extra: &[&str]| {
            let mut full = args.to_vec();
            full.extend(extra);
            output_of(parse(&full).expect("valid"))
        };
        assert!(output(&["--brief"]).brief, "{args:?}");
        assert!(!output(&[]).brief, "{args:?}: off by default");
        let mut full = args.to_vec();
        full.extend(["--brief", "--json"]);
        let e = parse(&full).expect_err("one output at a time");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{args:?}");
    }
    let given = |line: &[&str]| super::interval_given(line.iter().map(std::ffi::OsString::from));
    assert!(
        given(&["linerate", "tcp", "h", "--brief", "-i", "1"]),
        "even at the default"
    );
    assert!(given(&["linerate", "udp", "h", "--interval=0.5"]));
    assert!(given(&["linerate", "http", "http://h/", "-i0.5"]));
    assert!(
        !given(&["linerate", "tcp", "h", "--brief"]),
        "the default is not asked for"
    );
    assert!(!given(&["linerate", "quick", "--brief"]), "quick has no -i");
    assert!(!given(&["linerate", "tcp"]), "a line that does not parse");
}

#[test]
fn bind_sets_the_clients_source_address_in_every_test_command() {
    for cmd in ["tcp", "udp", "rr"] {
        for args in [vec![cmd, "h", "-B", "127.0.0.2"], vec![cmd, "h", "--bind=127.0.0.2"]] {
            let opts = match parse(&args).expect("valid") {
                Command::Tcp(a) => a.reach.options(),
                Command::Udp(a) => a.common.reach.options(),
                Command::Rr(a) => a.common.reach.options(),
                _ => panic!("not a test command"),
            };
            assert_eq!(
                opts.expect("ok").bind,
                Some("127.0.0.2".parse().expect("ip")),
                "{args:?}"
            );
        }
    }
    assert!(parse(&["tcp", "h", "-B", "not-an-address"]).is_err());
}

/// A wrong-sign value says so, not `unexpected argument '-1' found`.
fn refused_as_negative(args: &[&str], flag: &str, value: &str) {
    let err = parse(args).expect_err("a negative value is refused").to_string();
    assert!(err.contains(flag), "names {flag}: {err}");
    assert!(err.contains(&format!("must be positive, got {value}")), "{err}");
}

#[test]
fn issue_13_negative_time_is_refused_as_negative() {
    refused_as_negative(&["tcp", "h", "-t", "-1"], "--time", "-1");
    refused_as_negative(&["udp", "h", "--time=-2.5"], "--time", "-2.5");
    refused_as_negative(&["rr", "h", "-t", "-1s"], "--time", "-1s");
}

#[test]
fn issue_13_negative_parallel_is_refused_as_negative() {
    refused_as_negative(&["tcp", "h", "-P", "-3"], "--parallel", "-3");
    refused_as_negative(&["rr", "h", "--parallel", "-1"], "--parallel", "-1");
}

#[test]
fn issue_13_negative_gap_is_refused_as_negative() {
    refused_as_negative(&["udp", "h", "--gap", "-5"], "--gap", "-5");
}

#[test]
fn issue_13_negative_count_is_refused_as_negative() {
    refused_as_negative(&["udp", "h", "-n", "-2"], "--count", "-2");
}

#[test]
fn issue_23_sizes_ranges_take_suffixes_and_refuse_as_usage() {
    use super::{parse_list, parse_sizes};
    use linerate_core::units::ByteSize;
    assert_eq!(
        parse_sizes("1K:4K:1K", Ok).expect("a range of sizes"),
        [1024, 2048, 3072, 4096].map(ByteSize)
    );
    assert_eq!(parse_sizes("64, 1K", Ok).expect("a list"), [64, 1024].map(ByteSize));
    let e = parse_sizes("8K:1K:1K", Ok).expect_err("end below start").to_string();
    assert_eq!(
        e,
        "--sizes '8K:1K:1K': the step must be above 0 and the end at or above the start"
    );
    let e = parse_sizes("1K,x", Ok).expect_err("not a size").to_string();
    assert!(e.starts_with("--sizes: 'x': "), "{e}");
    let e = parse_list("1:20000:1", "--gaps", |v| Ok(v.parse::<f64>()?))
        .expect_err("too many")
        .to_string();
    assert!(e.contains("more than 10000 values"), "{e}");
}

#[test]
fn issue_13_positive_values_still_parse() {
    assert!(parse(&["udp", "h", "-t", "1.5", "-P", "2", "--gap", "10"]).is_ok());
    assert!(parse(&["tcp", "h", "-n", "3"]).is_ok());
}
