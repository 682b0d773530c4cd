//! Usage errors: a flag or value a command cannot run with, whether clap found it or a check
//! after parsing did (a range, a combination of flags). `main` exits 2 on any error whose chain
//! holds one (README, "Exit status"). Every check that turns the command line into a spec, a
//! repeat policy, a sweep or a command's options returns this type, so what it refuses is a
//! usage error by construction; a runtime failure (an agent out of reach, a store error) has
//! no way into it and keeps its own status. Clap's own errors are told here too, in one line
//! ([`one_line`]).

use linerate_core::agent::ProfileError;
use linerate_core::result::RepeatError;
use linerate_core::spec::SpecError;
use linerate_lab::LabError;
use linerate_results::store::StoreError;

/// A command line that cannot run, in one line naming the flag.
#[derive(Debug, thiserror::Error)]
pub enum Usage {
    /// A spec out of range or in conflict (linerate-core's checks, the agent's too).
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A repeat policy that cannot run (`--repeat 0`, `--best` over the runs).
    #[error(transparent)]
    Repeat(#[from] RepeatError),
    /// A `serve --profile` that cannot be served (no command, a bad name, an undo of nothing).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A plan file that does not read or check, or a `plan run --resume` with other options
    /// than the campaign's: the file is the command's argument, as a flag's value is. Built
    /// by hand, never by `?`, so that no runtime failure becomes a usage error unseen.
    #[error(transparent)]
    Plan(anyhow::Error),
    /// Any other flag or value, or flags that do not go together.
    #[error("{0}")]
    Flag(String),
}

/// A [`Usage::Flag`] error, `format!`-style: `return Err(usage!("--gap must be ..."))`.
macro_rules! usage {
    ($($arg:tt)*) => {
        $crate::cli::usage::Usage::Flag(format!($($arg)*))
    };
}
pub(crate) use usage;

/// Whether `err` is a usage error: a [`Usage`] anywhere in its chain, core's typed spec and
/// repeat-policy errors however they were wrapped (a sweep point's spec is checked in the
/// driver), the store's refusal of a result id or label as written (`results show x1`), or the
/// lab's of a name, host count, link spec or missing command (`lab up --hosts 0`), and of a
/// lab or host that does not exist (`lab down --name nosuch`).
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.is::<Usage>()
            || e.is::<SpecError>()
            || e.is::<RepeatError>()
            || e.downcast_ref::<StoreError>()
                .is_some_and(|s| matches!(s, StoreError::BadId { .. } | StoreError::BadLabel { .. }))
            || e.downcast_ref::<LabError>().is_some_and(|l| {
                matches!(
                    l,
                    LabError::Name(_)
                        | LabError::Hosts(_)
                        | LabError::Link { .. }
                        | LabError::NoCommand
                        | LabError::NoLab { .. }
                        | LabError::NoHost { .. }
                )
            })
    })
}

/// A usage error: a bad flag or value, found by clap or by a check after it (README, "Exit
/// status").
pub const EXIT_USAGE: u8 = 2;

/// Clap's error in one line naming the problem, not its usage block.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    // `-i -1`: a value with a sign, named as such, whatever the flag's parser says of it.
    if let (Some(arg), Some(value)) = (text(ContextKind::InvalidArg), text(ContextKind::InvalidValue))
        && looks_negative(value)
    {
        let flag = arg.split_whitespace().next().unwrap_or(arg);
        return format!("{flag}: a negative value is not allowed, got {value}");
    }
    // `-t -1s` where the flag takes no hyphen: clap reads `-1s` as flags; name the flag before it.
    if e.kind() == clap::error::ErrorKind::UnknownArgument
        && let Some(arg) = text(ContextKind::InvalidArg)
        && looks_negative(arg)
    {
        let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
        if let Some(i) = args.iter().position(|a| a.starts_with(arg))
            && let Some(flag) = args[..i].last().filter(|f| f.starts_with('-'))
        {
            return format!("{flag}: a negative value is not allowed, got {}", args[i]);
        }
        return format!("{arg}: a negative value is not allowed");
    }
    let rendered = e.render().to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut first = lines.next().unwrap_or("bad arguments").to_string();
    // "the following required arguments were not provided:" names them on the next line.
    if first.ends_with(':')
        && let Some(next) = lines.next()
    {
        first = format!("{first} {next}");
    }
    // Keep clap's list of valid values and its suggestion ("tip: a similar argument exists:
    // '--window'") on the line.
    for tip in rendered
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip:") || l.starts_with("[possible values:"))
    {
        first = format!("{first}; {tip}");
    }
    first.trim_start_matches("error: ").to_string()
}

/// Whether a value reads as a negative number, a unit after it or not (`-1`, `-2.5`, `-1s`).
pub fn looks_negative(value: &str) -> bool {
    value
        .trim_start()
        .strip_prefix('-')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn issue_23_usage_is_found_through_context_and_runtime_errors_are_not_usage() {
        let spec: Result<(), SpecError> = Err(SpecError::CooldownWithCount);
        let e = spec.context("sweep point -l 0").expect_err("an error");
        assert!(is_usage(&e), "core's spec error under context");
        let e = anyhow::Error::from(usage!("--best needs --repeat")).context("tcp");
        assert!(is_usage(&e));
        assert_eq!(format!("{:#}", e), "tcp: --best needs --repeat");
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(!is_usage(&anyhow::Error::from(io).context("cannot connect")));
    }

    #[test]
    fn a_plan_refusal_keeps_its_whole_chain_and_a_profile_its_line() {
        let read = anyhow::anyhow!("No such file or directory").context("reading plan p.toml");
        let e = anyhow::Error::from(Usage::Plan(read));
        assert!(is_usage(&e));
        assert_eq!(format!("{e:#}"), "reading plan p.toml: No such file or directory");
        let bad = linerate_core::agent::Profiles::parse(&["x.undo=true"]).expect_err("an undo of nothing");
        let e = anyhow::Error::from(Usage::from(bad));
        assert!(is_usage(&e));
        assert_eq!(format!("{e:#}"), "--profile x.undo: there is no profile 'x' to undo");
    }

    #[test]
    fn issue_23_negative_values_are_told_from_flags() {
        for v in ["-1", "-2.5", "-1s", "-.5", " -3"] {
            assert!(looks_negative(v), "{v}");
        }
        for v in ["1", "--json", "-t", "-P", ""] {
            assert!(!looks_negative(v), "{v}");
        }
    }
}
