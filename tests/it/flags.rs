//! One language of flags: bare `linerate` lists the subcommands, a typo names the
//! flag meant, and the completion script and man page come from the same definitions.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn issue_13_bare_linerate_lists_the_subcommands_and_exits_2() {
    let out = linerate(&[], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    for sub in ["tcp", "udp", "rr", "http", "serve", "completions"] {
        assert!(
            err.lines().any(|l| l.trim_start().starts_with(sub)),
            "{sub} not listed: {err}"
        );
    }
}

#[test]
fn issue_13_a_typo_names_the_nearest_flag_on_one_line() {
    let out = linerate(&["tcp", "127.0.0.1", "--windw", "1M"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("linerate: unexpected argument '--windw'"), "{err}");
    assert!(err.contains("'--window'"), "{err}");
}

#[test]
fn issue_13_completions_name_the_subcommands_and_flags() {
    let out = linerate(&["completions", "bash"], LIMIT);
    assert!(out.status.success(), "{out:?}");
    let script = stdout(&out);
    assert!(script.contains("tcp") && script.contains("--window"), "{script}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = linerate(&["completions", shell], LIMIT);
        // fish spells a long flag `-l window`.
        assert!(out.status.success() && stdout(&out).contains("window"), "{shell}");
    }
    let out = linerate(&["completions", "tcsh"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).trim_end().lines().count(), 1, "{}", stderr(&out));
}

#[test]
fn issue_13_renamed_flags_give_one_line_errors() {
    for (args, needle) in [
        (&["rr", "127.0.0.1:1", "--tps", "fast"][..], "--tps"),
        (&["rr", "127.0.0.1:1", "--timeout", "soon"], "'soon' is not a time"),
        (
            &["rr", "127.0.0.1:1", "--timeout", "100"],
            "timeout (ms) must be between 1 and 60000",
        ),
        (&["http", "http://127.0.0.1:1/", "--rps", "many"], "--rps"),
        (
            &["udp", "127.0.0.1:1", "--cooldown", "1", "-n", "5"],
            "--cooldown needs a time limit",
        ),
        (
            &["http", "http://127.0.0.1:1/", "-t", "1", "--cooldown", "2"],
            "leave nothing",
        ),
    ] {
        let out = linerate(args, LIMIT);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn issue_13_man_prints_one_roff_page_of_every_subcommand() {
    let out = linerate(&["man"], LIMIT);
    assert!(out.status.success(), "{out:?}");
    let page = stdout(&out);
    // clap_mangen opens with two roff conditionals (the quote string), then the title macro.
    let first_macro = page.lines().find(|l| !l.starts_with(".ie") && !l.starts_with(".el"));
    assert!(first_macro.is_some_and(|l| l.starts_with(".TH linerate 1")), "{page}");
    assert_eq!(page.matches(".TH ").count(), 1, "one page");
    for section in ["LINERATE TCP", "LINERATE UDP", "LINERATE RR", "LINERATE HTTP"] {
        assert!(page.contains(section), "{section} missing");
    }
    assert!(page.contains("cooldown") && page.contains("tps") && page.contains("rps"));
}

/// `man` is listed in `--help`; the one page names its sections for the commands (no
/// page it does not come with), and `man --dir` writes every page that any page refers to.
#[test]
fn issue_23_man_is_listed_and_refers_to_no_page_that_does_not_exist() {
    let listed = stdout(&linerate(&["--help"], LIMIT));
    assert!(
        listed.lines().any(|l| l.trim_start().starts_with("man ")),
        "man is listed: {listed}"
    );
    let page = stdout(&linerate(&["man"], LIMIT));
    assert!(!page.contains("(1)"), "the one page refers to no other page");
    for section in ["LINERATE PLAN CHECK", "LINERATE RESULTS SHOW", "LINERATE CALC GOODPUT"] {
        assert!(page.contains(section), "{section}: nested commands have their section");
    }
    assert!(page.contains("linerate tcp\\fR (section LINERATE TCP below)"), "{page}");

    let dir = tempfile::tempdir().expect("tempdir");
    let out = linerate(&["man", "--dir", dir.path().to_str().expect("path")], LIMIT);
    assert!(out.status.success(), "{out:?}");
    let written: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(written.len() > 20, "{written:?}");
    let mut references = 0;
    for file in &written {
        let text = std::fs::read_to_string(dir.path().join(file)).expect("read page");
        // clap_mangen writes a reference as `linerate\-plan\-check(1)`.
        for (at, _) in text.match_indices("(1)") {
            let start = text[..at].rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
            let name = text[start..at].replace("\\-", "-");
            assert!(
                written.contains(&format!("{name}.1")),
                "{file} refers to {name}(1), not written"
            );
            references += 1;
        }
    }
    assert!(references > 20, "the pages refer to each other ({references})");
    assert!(written.contains(&"linerate-plan-check.1".to_string()), "{written:?}");
    assert!(
        !written.iter().any(|f| f.contains("help")),
        "no page for help: {written:?}"
    );
}

#[test]
fn a_bad_qoo_requirement_is_one_line_and_exit_2_before_any_traffic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("voip.toml");
    // useless_ms misspelt: the key is named, with its line.
    std::fs::write(
        &file,
        "name = \"voip\"\n[[latency]]\npercentile = 99\nperfect_ms = 100\nuseles_ms = 300\n",
    )
    .expect("write");
    let path = file.to_str().expect("utf-8 path");
    // Port 1: nothing listens there, and nothing is sent: the file is read first.
    let out = linerate(&["tcp", "127.0.0.1:1", "--no-store", "--qoo", path], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("linerate: --qoo {path}: line 5")), "{err}");
    assert!(err.contains("unknown field `useles_ms`"), "{err}");
    // An unknown name lists the built-in ones.
    let out = linerate(&["udp", "127.0.0.1:1", "--no-store", "--qoo", "voip"], LIMIT);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = stderr(&out);
    assert_eq!(
        err.trim_end(),
        "linerate: --qoo \"voip\": not a built-in requirement (video-call, gaming, streaming) nor a FILE.toml"
    );
}
