//! Agent profiles: commands the agent's owner names at start
//! (`linerate serve --profile NAME=COMMAND`, and `NAME.undo=COMMAND`) for A/B tests of this
//! host's configuration. A client may only choose among them by name; the agent runs no other
//! command. Around a test asked for under a profile the agent runs its command (`sh -c`, killed
//! at [`PROFILE_TIMEOUT`]) before it accepts the test, reads its configuration after the window
//! as always (so under the profile), then runs the undo and records both in its report. One
//! profiled test at a time: profiles change the host for every test on it.

use super::refusal::Refusal;
use crate::proto::{ErrorKind, PROFILE_TIMEOUT, peer_text, peer_text_cut};
use crate::result::{CommandRecord, ProfileRecord};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most bytes of a command's output kept.
pub const OUTPUT_BYTES: usize = 4096;
/// How long after a command exited its output may still be read (a child it left in the
/// background may hold the pipe open).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

/// One profile: a name, its command, and its undo when the owner gave one.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    pub command: String,
    pub undo: Option<String>,
}

/// The profiles an agent was started with, in the order given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profiles(Vec<Profile>);

/// A `--profile` that cannot be served.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("--profile '{}': expected NAME=COMMAND", peer_text(.0))]
    NoCommand(String),
    #[error("--profile name '{}': use letters, digits, '-' and '_' (and '.undo' for an undo)", peer_text(.0))]
    BadName(String),
    #[error("--profile {0}: the command is empty")]
    EmptyCommand(String),
    #[error("--profile {0} is given twice")]
    Twice(String),
    #[error("--profile {0}.undo: there is no profile '{0}' to undo")]
    UndoWithout(String),
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Profiles {
    /// Parses `NAME=COMMAND` and `NAME.undo=COMMAND` entries; an undo needs its profile.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Profiles, ProfileError> {
        let mut profiles: Vec<Profile> = Vec::new();
        let mut undos: Vec<(String, String)> = Vec::new();
        for entry in entries {
            let entry = entry.as_ref();
            let Some((name, command)) = entry.split_once('=') else {
                return Err(ProfileError::NoCommand(entry.to_string()));
            };
            let (base, undo) = match name.strip_suffix(".undo") {
                Some(base) => (base, true),
                None => (name, false),
            };
            if !valid_name(base) {
                return Err(ProfileError::BadName(name.to_string()));
            }
            if command.trim().is_empty() {
                return Err(ProfileError::EmptyCommand(name.to_string()));
            }
            let (name, command) = (name.to_string(), command.to_string());
            if undo {
                if undos.iter().any(|(n, _)| *n == base) {
                    return Err(ProfileError::Twice(name));
                }
                undos.push((base.to_string(), command));
            } else {
                if profiles.iter().any(|p| p.name == name) {
                    return Err(ProfileError::Twice(name));
                }
                profiles.push(Profile {
                    name,
                    command,
                    undo: None,
                });
            }
        }
        for (base, command) in undos {
            let Some(p) = profiles.iter_mut().find(|p| p.name == base) else {
                return Err(ProfileError::UndoWithout(base));
            };
            p.undo = Some(command);
        }
        Ok(Profiles(profiles))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The profiles' names, in the order given.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|p| p.name.as_str()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.0.iter().find(|p| p.name == name)
    }

    /// The profile a client asked for, or the refusal that names the ones there are.
    pub(super) fn find(&self, name: &str) -> Result<&Profile, Refusal> {
        self.get(name).ok_or_else(|| {
            let has = if self.is_empty() {
                "it has none; see `linerate serve --profile`".to_string()
            } else {
                format!("it has: {}", self.names().join(", "))
            };
            (
                ErrorKind::BadSpec,
                format!("agent has no profile '{}' ({has})", peer_text(name)),
            )
        })
    }
}

/// The agent's one profile slot: which profile's test runs now, and its undo until that has run.
/// Whoever runs the undo first takes it (the test when its report is made or it ends, the agent
/// when it stops), so it runs once; one that does not succeed goes to the owner's
/// callback with its command. Closed when the agent stops: no profile runs after that.
#[derive(Default)]
pub(super) struct Running {
    slot: Mutex<InForce>,
    /// Held while an undo runs: the agent's stop waits for one in flight before it returns.
    undoing: Mutex<()>,
    /// Told of an undo that did not succeed: the profile's name and what happened.
    on_failed_undo: OnceLock<FailedUndo>,
}

/// The callback an undo that did not succeed goes to: the profile's name and what happened.
type FailedUndo = Box<dyn Fn(&str, String) + Send + Sync>;

#[derive(Default)]
struct InForce {
    /// The profile in force (or being applied), and its undo until it has been taken to run.
    claim: Option<(String, Option<String>)>,
    closed: bool,
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, InForce> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where an undo that did not succeed is told (set once, when the agent starts serving).
    pub(super) fn on_failed_undo(&self, tell: impl Fn(&str, String) + Send + Sync + 'static) {
        let _ = self.on_failed_undo.set(Box::new(tell));
    }

    /// Takes the slot for `profile`, or says why not.
    fn claim(&self, profile: &Profile) -> Result<(), Refusal> {
        let mut slot = self.lock();
        if slot.closed {
            return Err((ErrorKind::Failed, STOPPING.into()));
        }
        if let Some((other, _)) = &slot.claim {
            return Err((
                ErrorKind::Busy,
                format!(
                    "this agent is running a test under its profile '{other}'; one profiled test at a time, \
                     retry when it is over"
                ),
            ));
        }
        slot.claim = Some((profile.name.clone(), profile.undo.clone()));
        Ok(())
    }

    /// Runs the pending undo, if any, and returns its record; waits for one another thread runs.
    fn run_undo(&self) -> Option<CommandRecord> {
        let _one_at_a_time = self.undoing.lock().unwrap_or_else(|e| e.into_inner());
        let (name, undo) = {
            let mut slot = self.lock();
            let (name, undo) = slot.claim.as_mut()?;
            (name.clone(), undo.take()?)
        };
        let record = run_command(&undo, PROFILE_TIMEOUT);
        if !record.succeeded()
            && let Some(tell) = self.on_failed_undo.get()
        {
            tell(&name, describe(&record));
        }
        Some(record)
    }

    /// The agent stops: no profile runs from now on.
    pub(super) fn close(&self) {
        self.lock().closed = true;
    }

    /// The agent stops: runs the undo still pending, after one in flight has finished.
    pub(super) fn undo_pending(&self) {
        self.run_undo();
    }

    /// The agent stops at once: runs the undo still pending, unless another thread is running it
    /// now (that one's process group goes on when the agent has exited).
    pub(super) fn undo_now(&self) {
        if !matches!(self.undoing.try_lock(), Err(std::sync::TryLockError::WouldBlock)) {
            self.run_undo();
        }
    }

    fn release(&self) {
        self.lock().claim = None;
    }
}

/// What a test is told, and its report notes, when the agent stops under it.
pub(super) const STOPPING: &str = "the agent is stopping";

/// A profile whose command ran and succeeded: its undo runs when [`Applied::finish`] records it
/// or, however the test ends, when this drops. Holds the agent's one profile slot meanwhile.
pub(super) struct Applied<'a> {
    name: String,
    run: CommandRecord,
    running: &'a Running,
}

impl Applied<'_> {
    /// Runs the undo (if any, and not run yet) and returns the record of both.
    pub(super) fn finish(self) -> ProfileRecord {
        let undo = self.running.run_undo();
        ProfileRecord {
            name: self.name.clone(),
            run: self.run.clone(),
            undo,
        }
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        self.running.run_undo();
        self.running.release();
    }
}

/// Runs the profile `name` from `profiles` before a test: refused when there is no such profile,
/// when another profiled test runs, when the agent is stopping, or when its command fails (its
/// undo then runs at once).
pub(super) fn apply<'a>(profiles: &Profiles, running: &'a Running, name: &str) -> Result<Applied<'a>, Refusal> {
    let profile = profiles.find(name)?;
    running.claim(profile)?;
    let run = run_command(&profile.command, PROFILE_TIMEOUT);
    let applied = Applied {
        name: profile.name.clone(),
        run,
        running,
    };
    if applied.run.succeeded() {
        return Ok(applied);
    }
    let message = format!("profile '{}': {}", profile.name, describe(&applied.run));
    drop(applied); // the undo runs, the slot is free
    Err((ErrorKind::Failed, message))
}

/// "`exit 3` exited with status 3 after 4 ms: its output", for a refusal.
pub fn describe(r: &CommandRecord) -> String {
    let how = match r.exit_status {
        Some(code) => format!("exited with status {code}"),
        None if r.timed_out => format!("was killed at its time-out ({} s)", PROFILE_TIMEOUT.as_secs()),
        None => "was killed by a signal".to_string(),
    };
    let output = if r.output.is_empty() {
        "no output".to_string()
    } else {
        format!("output: {}", r.output)
    };
    format!("`{}` {how} after {} ms; {output}", peer_text(&r.command), r.duration_ms)
}

/// Runs `command` with `sh -c` in its own process group, stdout and stderr into one pipe (the
/// first [`OUTPUT_BYTES`] kept); past `timeout` the whole group is killed.
pub fn run_command(command: &str, timeout: Duration) -> CommandRecord {
    let start = Instant::now();
    let record = |exit_status, timed_out, output: String| CommandRecord {
        command: command.to_string(),
        exit_status,
        timed_out,
        output,
        duration_ms: start.elapsed().as_millis() as u64,
    };
    let spawned = std::io::pipe().and_then(|(reader, writer)| {
        let err = writer.try_clone()?;
        let mut sh = Command::new("sh");
        // The agent's environment less its secret: a command that prints its environment would
        // send it to the client and into the store. (A secret file is read whole and closed at
        // start, and every descriptor the agent opens is close-on-exec: none reaches the shell.)
        sh.arg("-c")
            .arg(command)
            .env_remove("LINERATE_SECRET")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(err)
            .process_group(0);
        let child = sh.spawn()?;
        drop(sh); // our copies of the pipe's write end: the reader sees its end when the group's close
        Ok((child, reader))
    });
    let (mut child, reader) = match spawned {
        Ok(x) => x,
        Err(e) => return record(None, false, peer_text(&format!("cannot run sh: {e}"))),
    };
    let output = Arc::new(Mutex::new((Vec::new(), false)));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    {
        let output = Arc::clone(&output);
        std::thread::spawn(move || {
            drain(reader, &output);
            let _ = done_tx.send(());
        });
    }
    let deadline = start + timeout;
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.code(), false),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => {
                kill_group(child.id());
                let _ = child.wait();
                break (None, false);
            }
        }
    };
    let _ = done_rx.recv_timeout(DRAIN_TIMEOUT);
    let (bytes, more) = std::mem::take(&mut *output.lock().unwrap_or_else(|e| e.into_inner()));
    let text = String::from_utf8_lossy(&bytes);
    let mut text = peer_text_cut(text.trim_end(), OUTPUT_BYTES);
    if more {
        text.push_str("...");
    }
    record(status, timed_out, text)
}

/// Reads the pipe to its end, keeping the first [`OUTPUT_BYTES`] and whether more came.
fn drain(mut reader: std::io::PipeReader, output: &Mutex<(Vec<u8>, bool)>) {
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                let room = OUTPUT_BYTES.saturating_sub(out.0.len());
                out.0.extend_from_slice(&buf[..n.min(room)]);
                out.1 |= n > room;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals that process group; it touches no memory.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn issue_16_profiles_parse_with_their_undos() {
        let p = Profiles::parse(&[
            "toe-on=ethtool -K eth0 tso on",
            "mtu9000=ip link set mtu 9000",
            "toe-on.undo=x=y",
        ])
        .expect("valid");
        assert_eq!(p.names(), ["toe-on", "mtu9000"]);
        let toe = p.get("toe-on").expect("there");
        assert_eq!(toe.command, "ethtool -K eth0 tso on");
        assert_eq!(toe.undo.as_deref(), Some("x=y"), "the first '=' splits");
        assert_eq!(p.get("mtu9000").and_then(|m| m.undo.as_ref()), None);
        assert!(Profiles::parse::<&str>(&[]).expect("none").is_empty());
    }

    #[test]
    fn issue_16_bad_profiles_are_refused_in_one_line() {
        let err = |e: &[&str]| Profiles::parse(e).expect_err("refused");
        assert_eq!(err(&["toe-on"]), ProfileError::NoCommand("toe-on".into()));
        assert_eq!(err(&["toe on=x"]), ProfileError::BadName("toe on".into()));
        assert_eq!(err(&["=x"]), ProfileError::BadName("".into()));
        assert_eq!(err(&["a.b=x"]), ProfileError::BadName("a.b".into()));
        assert_eq!(err(&["a=  "]), ProfileError::EmptyCommand("a".into()));
        assert_eq!(err(&["a=x", "a=y"]), ProfileError::Twice("a".into()));
        assert_eq!(
            err(&["a=x", "a.undo=y", "a.undo=z"]),
            ProfileError::Twice("a.undo".into())
        );
        let e = err(&["a=x", "b.undo=y"]);
        assert_eq!(e, ProfileError::UndoWithout("b".into()));
        assert_eq!(e.to_string(), "--profile b.undo: there is no profile 'b' to undo");
        let forged = err(&["x\ny"]).to_string();
        assert!(!forged.contains('\n'), "{forged}");
    }

    #[test]
    fn issue_16_an_unknown_profile_is_refused_with_the_list() {
        let p = Profiles::parse(&["toe-on=true", "mtu9000=true"]).expect("valid");
        let (kind, message) = p.find("toe-off").expect_err("unknown");
        assert_eq!(kind, ErrorKind::BadSpec);
        assert_eq!(message, "agent has no profile 'toe-off' (it has: toe-on, mtu9000)");
        let (_, none) = Profiles::default().find("x").expect_err("unknown");
        assert!(none.contains("it has none"), "{none}");
    }

    #[test]
    fn issue_16_a_command_is_run_its_output_kept_cut_and_escaped() {
        let ok = run_command("echo hello; echo there >&2", Duration::from_secs(20));
        assert_eq!((ok.exit_status, ok.timed_out), (Some(0), false));
        assert_eq!(ok.output, "hello\\u{a}there");
        let failed = run_command("printf '\\033[2J'; exit 3", Duration::from_secs(20));
        assert_eq!(failed.exit_status, Some(3));
        assert_eq!(failed.output, "\\u{1b}[2J");
        assert!(describe(&failed).starts_with("`printf '\\033[2J'; exit 3` exited with status 3 after "));
        let long = run_command("head -c 100000 /dev/zero | tr '\\0' x", Duration::from_secs(20));
        assert_eq!(long.output.len(), OUTPUT_BYTES + 3, "cut, then '...'");
    }

    #[test]
    fn issue_16_a_command_past_its_time_out_is_killed_with_its_children() {
        let t0 = Instant::now();
        let r = run_command("sleep 30 & sleep 30; echo never", Duration::from_millis(300));
        assert!(r.timed_out && r.exit_status.is_none(), "{r:?}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "not waited out: {:?}",
            t0.elapsed()
        );
        assert!(describe(&r).contains("was killed at its time-out"), "{}", describe(&r));
    }

    /// A fresh directory named for `tag`, the file `on` in it, and the profiles: `a` makes `on`,
    /// its undo removes it, then `more`.
    fn marking(tag: &str, more: impl Fn(&std::path::Path) -> Vec<String>) -> (PathBuf, PathBuf, Profiles) {
        let dir = std::env::temp_dir().join(format!("linerate-profile-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let on = dir.join("on");
        let mut entries = vec![
            format!("a=touch {}", on.display()),
            format!("a.undo=rm {}", on.display()),
        ];
        entries.extend(more(&dir));
        (dir, on, Profiles::parse(&entries).expect("valid"))
    }

    #[test]
    fn issue_16_one_profiled_test_at_a_time_and_the_undo_always_runs() {
        let (dir, on, p) = marking("one", |dir| {
            vec![
                "b=true".into(),
                "bad=echo broken; exit 3".into(),
                format!("bad.undo=touch {}", dir.join("undone").display()),
            ]
        });
        let running = Running::default();
        let applied = apply(&p, &running, "a").expect("runs");
        assert!(on.exists(), "the command ran");
        let (kind, busy) = apply(&p, &running, "b").err().expect("one at a time");
        assert_eq!(kind, ErrorKind::Busy);
        assert!(busy.contains("profile 'a'"), "{busy}");
        let record = applied.finish();
        assert!(!on.exists(), "the undo ran");
        assert_eq!(record.undo.as_ref().map(CommandRecord::succeeded), Some(true));
        drop(apply(&p, &running, "b").expect("free again"));
        let (kind, failed) = apply(&p, &running, "bad").err().expect("fails");
        assert_eq!(kind, ErrorKind::Failed);
        assert!(
            failed.contains("exited with status 3") && failed.contains("broken"),
            "{failed}"
        );
        assert!(dir.join("undone").exists(), "a failed profile is undone too");
        assert!(running.lock().claim.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn issue_22_a_stopping_agent_runs_the_pending_undo_once_and_tells_of_one_that_failed() {
        let (dir, on, p) = marking("stop", |_| vec!["b=true".into(), "b.undo=echo cannot; exit 4".into()]);
        let running = Running::default();
        let told = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&told);
        running.on_failed_undo(move |name, what| log.lock().expect("lock").push(format!("{name}: {what}")));
        let applied = apply(&p, &running, "a").expect("runs");
        assert!(on.exists());
        // The agent stops while the test holds the profile: the undo runs now, and not again.
        running.close();
        running.undo_pending();
        assert!(!on.exists(), "undone at the stop");
        let record = applied.finish();
        assert!(record.undo.is_none(), "the undo ran once");
        let (kind, refused) = apply(&p, &running, "b").err().expect("closed");
        assert_eq!((kind, refused.as_str()), (ErrorKind::Failed, STOPPING));
        // Stopped at once (a second signal): the pending undo still runs, on the spot.
        let abandoned = Running::default();
        let held = apply(&p, &abandoned, "a").expect("runs");
        abandoned.close();
        abandoned.undo_now();
        assert!(!on.exists(), "undone at once");
        std::mem::forget(held); // as the process exits: no drop runs
        // An undo that fails is told with its command.
        let fresh = Running::default();
        let log = Arc::clone(&told);
        fresh.on_failed_undo(move |name, what| log.lock().expect("lock").push(format!("{name}: {what}")));
        drop(apply(&p, &fresh, "b").expect("runs"));
        let told = told.lock().expect("lock").clone();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(
            told[0].starts_with("b: `echo cannot; exit 4` exited with status 4") && told[0].contains("cannot"),
            "{told:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
