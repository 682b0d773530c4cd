//! Whether an agent applied the profile the client asked for. The client does not take
//! the agent's word: a result with no profile record, another profile's, or one whose command
//! did not exit 0 would let an A/B campaign quietly measure the host unchanged, so `drive` ends
//! such a run failed. In: what the client asked (`--profile`) and the record the agent sent
//! (checked and escaped already). Out: why it is not the one asked for, in one line.

use crate::proto::peer_text;
use crate::result::{CommandRecord, ProfileRecord};

/// How a command that did not exit 0 ended, in a few words.
fn how(r: &CommandRecord) -> String {
    match r.exit_status {
        Some(code) => format!("`{}` exited with status {code}", peer_text(&r.command)),
        None if r.timed_out => format!("`{}` was killed at its time-out", peer_text(&r.command)),
        None => format!("`{}` did not exit (killed by a signal)", peer_text(&r.command)),
    }
}

/// Why the agent's profile record `got` is not what the client asked for (`asked`), or None when
/// it is: the same profile, its command exited 0; or no profile asked and none applied.
pub(super) fn fault(asked: Option<&str>, got: Option<&ProfileRecord>) -> Option<String> {
    match (asked, got) {
        (None, None) => None,
        (Some(name), None) => Some(format!(
            "asked for profile '{}', its result has no profile record",
            peer_text(name)
        )),
        (None, Some(r)) => Some(format!(
            "asked for no profile, its result says it applied '{}'",
            peer_text(&r.name)
        )),
        (Some(name), Some(r)) if r.name != name => Some(format!(
            "asked for profile '{}', its result says it applied '{}'",
            peer_text(name),
            peer_text(&r.name)
        )),
        (Some(name), Some(r)) if !r.run.succeeded() => Some(format!(
            "profile '{}' was not applied: {}",
            peer_text(name),
            how(&r.run)
        )),
        (Some(_), Some(_)) => None,
    }
}

/// A note when the profile's undo did not succeed: the measurement stands, the host may not be
/// as it was.
pub(super) fn undo_note(got: Option<&ProfileRecord>) -> Option<String> {
    let r = got?;
    let undo = r.undo.as_ref().filter(|u| !u.succeeded())?;
    Some(format!(
        "the undo of profile '{}' did not succeed ({}): the host may still be changed",
        peer_text(&r.name),
        how(undo)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, exit_status: Option<i32>) -> ProfileRecord {
        ProfileRecord {
            name: name.into(),
            run: CommandRecord {
                command: "ethtool -K eth0 tso off".into(),
                exit_status,
                timed_out: false,
                output: String::new(),
                duration_ms: 3,
            },
            undo: None,
        }
    }

    #[test]
    fn issue_22_only_the_profile_asked_for_with_status_0_passes() {
        assert_eq!(fault(None, None), None);
        assert_eq!(fault(Some("p"), Some(&record("p", Some(0)))), None);
        assert_eq!(
            fault(Some("p"), None).as_deref(),
            Some("asked for profile 'p', its result has no profile record")
        );
        assert_eq!(
            fault(Some("p"), Some(&record("other", Some(0)))).as_deref(),
            Some("asked for profile 'p', its result says it applied 'other'")
        );
        assert_eq!(
            fault(Some("p"), Some(&record("p", Some(1)))).as_deref(),
            Some("profile 'p' was not applied: `ethtool -K eth0 tso off` exited with status 1")
        );
        let killed = ProfileRecord {
            run: CommandRecord {
                timed_out: true,
                ..record("p", None).run
            },
            ..record("p", None)
        };
        assert!(fault(Some("p"), Some(&killed)).is_some_and(|f| f.ends_with("was killed at its time-out")));
        assert_eq!(
            fault(None, Some(&record("p", Some(0)))).as_deref(),
            Some("asked for no profile, its result says it applied 'p'")
        );
    }

    #[test]
    fn issue_22_a_failed_undo_is_a_note() {
        let mut r = record("p", Some(0));
        assert_eq!(undo_note(Some(&r)), None);
        r.undo = Some(record("p", Some(2)).run);
        assert!(
            undo_note(Some(&r))
                .is_some_and(|n| n.contains("exited with status 2") && n.ends_with("the host may still be changed"))
        );
    }
}
