//! Usage errors: a flag or value a command cannot run with, whether clap found it or a check
//! after parsing did (a range, a combination of flags). `main` exits 2 on any error whose chain
//! holds one (README, "Exit status"). Every check that turns the command line into a spec, a
//! repeat policy, a sweep or a command's options returns this type, so what it refuses is a
//! usage error by construction; a runtime failure (an agent out of reach, a store error) has
//! no way into it and keeps its own status.

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
/// lab's of a name, host count, link spec or missing command (`lab up --hosts 0`).
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
                    LabError::Name(_) | LabError::Hosts(_) | LabError::Link { .. } | LabError::NoCommand
                )
            })
    })
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
}
