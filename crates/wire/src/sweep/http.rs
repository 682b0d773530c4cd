//! What an HTTP user sweep keeps of `--baseline`: [`HttpBaseline`], written into the sweep's
//! document and, with each run's share of it, into each run's result.

use crate::result::{Baseline, TestResult};
use serde::{Deserialize, Serialize};

/// What this client drives against linerate's own server on this host (`--baseline`): kept in
/// an http sweep's document (`baseline`) and, with this run's share, in each run's result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HttpBaseline {
    pub responses_per_second: f64,
    pub bits_per_second_in: f64,
    /// The object size served: the mean body length of the URLs under test.
    pub object_bytes: u64,
    /// The users it ran with: the test's (a sweep's first count).
    pub users: u32,
}

/// The share of the baseline from which a note says the client may be the bottleneck.
const GENERATOR_BOUND_SHARE: f64 = 0.9;

impl HttpBaseline {
    /// Writes the baseline and this run's share of it into an HTTP result, with a note when the
    /// run came close to what the client can drive at all.
    pub fn apply(&self, result: &mut TestResult) {
        let Some(h) = result.summary.http.as_mut() else {
            return;
        };
        let rps = self.responses_per_second;
        let share = if rps > 0.0 { h.responses_per_second / rps } else { 0.0 };
        h.baseline = Some(Baseline {
            responses_per_second: rps,
            bits_per_second_in: self.bits_per_second_in,
            share_percent: 100.0 * share,
            object_bytes: Some(self.object_bytes),
            users: Some(self.users),
        });
        if share >= GENERATOR_BOUND_SHARE {
            result.notes.push(format!(
                "the load generator may be the bottleneck: this run reached {:.0} % of the {:.0} responses/s this client drives against linerate's own server on this host",
                100.0 * share,
                rps
            ));
        }
    }

    /// The baseline a run's result carries, whole: none from a document stored before results
    /// kept its object size and users.
    pub fn of(baseline: &Baseline) -> Option<HttpBaseline> {
        Some(HttpBaseline {
            responses_per_second: baseline.responses_per_second,
            bits_per_second_in: baseline.bits_per_second_in,
            object_bytes: baseline.object_bytes?,
            users: baseline.users?,
        })
    }
}

impl HttpBaseline {
    /// The baseline a run of core's `sweep::http::baseline_load` measured, `users` as the test asked.
    pub fn measured(result: &TestResult, object_bytes: u64, users: u32) -> HttpBaseline {
        let h = result.summary.http.clone().unwrap_or_default();
        HttpBaseline {
            responses_per_second: h.responses_per_second,
            bits_per_second_in: h.bits_per_second_in,
            object_bytes,
            users,
        }
    }
}
