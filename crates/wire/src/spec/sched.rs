//! `--sched`: the scheduling policy of the HTTP client's worker threads. The type, its parsing
//! and its words; the runner (`engine::run`) sets it on each worker (`engine::pin`).

use serde::{Deserialize, Serialize};

/// A worker thread's scheduling policy (sched(7)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sched {
    /// SCHED_OTHER, the kernel's default: a worker woken by a response preempts whatever runs
    /// on its CPU. What documents without the key ran with.
    #[default]
    Normal,
    /// SCHED_BATCH: the same share of the CPU, but a wake-up does not preempt. A server on the
    /// same host finishes its turn (its batch of responses) before the client reads them, instead
    /// of being interrupted at each one; on an idle CPU nothing changes.
    Batch,
}

words!(Sched, "a scheduling policy", Batch => "batch", Normal => "normal");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_others_are_refused() {
        for s in [Sched::Normal, Sched::Batch] {
            assert_eq!(s.name().parse::<Sched>(), Ok(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert!("fifo".parse::<Sched>().unwrap_err().contains("batch or normal"));
    }
}
