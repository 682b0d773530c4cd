//! Interval lines while a test runs: one more consumer of samples.

use linerate_core::client::Sink;
use linerate_core::result::{IntervalSample, Role};
use std::io::Write;

/// Prints one line per interval to stdout; stays silent when `quiet`.
pub struct LiveLines {
    /// What this end does with each stream, by stream number: told by the engine at its start.
    roles: Vec<Role>,
    retrans: Vec<u64>,
    quiet: bool,
    /// Request-response and HTTP: what completes per second ("transactions", "responses")
    /// instead of Mbit/s.
    per_second: Option<&'static str>,
}

impl LiveLines {
    pub fn new(quiet: bool) -> LiveLines {
        LiveLines {
            roles: Vec::new(),
            retrans: Vec::new(),
            quiet,
            per_second: None,
        }
    }

    /// Lines of `what` completed per second (request-response and HTTP runs).
    pub fn per_second(mut self, what: &'static str) -> LiveLines {
        self.per_second = Some(what);
        self
    }
}

impl Sink for LiveLines {
    fn start(&mut self, streams: &[(u16, Role)]) {
        let count = streams.iter().map(|(id, _)| usize::from(*id) + 1).max().unwrap_or(0);
        // Numbers no stream has (none in practice) count as received, as the lines always did.
        self.roles = vec![Role::Receive; count];
        for (id, role) in streams {
            self.roles[usize::from(*id)] = *role;
        }
        self.retrans = vec![0; count];
    }

    fn interval(&mut self, samples: &[IntervalSample]) {
        // The last interval of a run can be a sliver (a few ms after the last full one): its
        // rate is noise on screen, though it stays in the document.
        let sliver = samples
            .first()
            .is_none_or(|s| s.end_ns.saturating_sub(s.start_ns) < 50_000_000);
        if self.quiet || sliver {
            return;
        }
        let line = if let Some(what) = self.per_second {
            linerate_report::live::completed_line(samples, &self.roles, what)
        } else {
            linerate_report::live::interval_line(samples, &self.roles, &mut self.retrans)
        };
        // A closed stdout (| head) is not an error; the run goes on and its result still stands.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}
