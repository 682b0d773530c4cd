//! Quality of Outcome requirements as `--qoo` names them: a built-in one by name
//! (`linerate_wire::grade::qoo::BUILTIN`) or a user's own in a TOML file.
//!
//! In: `--qoo`'s value. Out: a checked [`QooRequirement`], or one line naming the key (and the
//! line of the file) at fault. The file's shape (docs/results.md, "Grades"):
//!
//! ```toml
//! name = "voip"
//! [[latency]]
//! percentile = 99
//! perfect_ms = 100
//! useless_ms = 300
//! [loss]            # optional
//! perfect_percent = 0.5
//! useless_percent = 3
//! ```

use crate::plan::Position;
pub use linerate_wire::grade::QooRequirement;
use linerate_wire::grade::qoo::{BUILTIN, builtin};
use linerate_wire::result::TestResult;
use std::path::Path;

/// Grades a run's latency under load (`linerate_wire::grade::grade`: bufferbloat, the RPM
/// category of its loaded round trip, one Quality of Outcome score per requirement); a run
/// without latency figures has nothing to grade.
pub fn grade_run(r: &mut TestResult, requirements: &[QooRequirement]) {
    if let Some(latency) = &mut r.latency {
        linerate_wire::grade::grade(latency, requirements);
    }
}

/// Reads a requirement from TOML text; the error is one line: where, and which key.
pub fn parse(text: &str) -> Result<QooRequirement, String> {
    let req: QooRequirement = toml::from_str(text).map_err(|e| {
        // toml's own text spans several lines (the source line, a caret): its message alone,
        // with the position, keeps it to one.
        let message = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(span) => format!("{}: {message}", Position::of(text, span.start)),
            None => message,
        }
    })?;
    req.validate()?;
    Ok(req)
}

/// `--qoo`'s value: a built-in name, else a file (a name ending in `.toml` or holding a `/`
/// is always a file). The error is one line naming the file or the names known.
pub fn requirement(arg: &str) -> Result<QooRequirement, String> {
    let is_file = arg.ends_with(".toml") || arg.contains('/');
    if !is_file {
        return builtin(arg).ok_or_else(|| {
            format!(
                "--qoo {arg:?}: not a built-in requirement ({}) nor a FILE.toml",
                BUILTIN.join(", ")
            )
        });
    }
    let path = Path::new(arg);
    let text = std::fs::read_to_string(path).map_err(|e| format!("--qoo {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("--qoo {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_with_integers_and_an_optional_loss() {
        let r = parse(
            "name = \"voip\"\n[[latency]]\npercentile = 99\nperfect_ms = 100\nuseless_ms = 300.5\n\
             [[latency]]\npercentile = 50\nperfect_ms = 30\nuseless_ms = 90\n",
        )
        .expect("reads");
        assert_eq!(r.name, "voip");
        assert_eq!(
            r.latency
                .iter()
                .map(|l| (l.percentile, l.perfect_ms, l.useless_ms))
                .collect::<Vec<_>>(),
            [(99.0, 100.0, 300.5), (50.0, 30.0, 90.0)]
        );
        assert_eq!(r.loss, None);
        let with_loss = parse(
            "name = \"x\"\nlatency = [{percentile = 90, perfect_ms = 1, useless_ms = 2}]\n\
             loss = {perfect_percent = 0.5, useless_percent = 3}\n",
        )
        .expect("reads");
        assert_eq!(
            with_loss.loss.map(|l| (l.perfect_percent, l.useless_percent)),
            Some((0.5, 3.0))
        );
    }

    #[test]
    fn a_bad_file_gets_one_line_naming_the_key() {
        let one_line = |text: &str| {
            let e = parse(text).expect_err("refused");
            assert!(!e.contains('\n'), "one line: {e}");
            e
        };
        let e = one_line("name = \"x\"\n[[latency]]\npercentile = 99\nperfect_ms = 100\n");
        assert!(e.contains("missing field `useless_ms`"), "{e}");
        assert!(e.starts_with("line 2"), "{e}");
        let e = one_line("name = \"x\"\n[[latency]]\npercentile = 99\nperfect_ms = 1\nuseless_ms = 2\nuseles = 3\n");
        assert!(e.contains("unknown field `useles`") && e.starts_with("line 6"), "{e}");
        let e = one_line("name = \"x\"\n[[latency]]\npercentile = \"p99\"\nperfect_ms = 1\nuseless_ms = 2\n");
        assert!(e.starts_with("line 3") && e.contains("invalid type"), "{e}");
        let e = one_line("name = \"x\"\n[[latency]]\npercentile = 99\nperfect_ms = 300\nuseless_ms = 100\n");
        assert_eq!(e, "latency[0].useless_ms: 100 must be above perfect_ms (300)");
        one_line("name = \"x\"\nlatency = [\n");
    }

    #[test]
    fn grading_a_run_fills_its_grades_and_leaves_a_run_without_latency_alone() {
        use linerate_wire::result::{LatencyUnderLoad, Summary};
        use linerate_wire::spec::{TcpSpec, TestSpec};
        let mut r = linerate_core::sweep::stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default());
        grade_run(&mut r, &[builtin("gaming").expect("built in")]);
        assert_eq!(r.latency, None, "nothing to grade");
        // 20 ms idle, 221 ms loaded: 201 ms added is D; 60000 / 221 = 271 RPM is Poor; no
        // loaded sample: the QoO score is unknown.
        r.latency = Some(LatencyUnderLoad {
            idle_ms: Some(20.0),
            loaded_ms: Some(221.0),
            added_ms: Some(201.0),
            ..LatencyUnderLoad::default()
        });
        grade_run(&mut r, &[builtin("gaming").expect("built in")]);
        let grades: Vec<(String, String)> = r
            .latency
            .expect("kept")
            .grades
            .into_iter()
            .map(|g| (g.scale, g.grade))
            .collect();
        assert_eq!(
            grades,
            [
                ("bufferbloat".to_string(), "D".to_string()),
                ("rpm from loaded round trip".into(), "Poor".into()),
                ("qoo gaming".into(), "unknown".into())
            ]
        );
    }

    #[test]
    fn a_name_is_a_builtin_and_a_path_is_a_file() {
        assert_eq!(requirement("gaming").map(|r| r.name), Ok("gaming".into()));
        let e = requirement("voip").expect_err("unknown");
        assert_eq!(
            e,
            "--qoo \"voip\": not a built-in requirement (video-call, gaming, streaming) nor a FILE.toml"
        );
        let e = requirement("/nonexistent/qoo.toml").expect_err("no file");
        assert!(e.starts_with("--qoo /nonexistent/qoo.toml: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
