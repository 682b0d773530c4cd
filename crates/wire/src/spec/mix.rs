//! The TOE workload's mix (`--mix R:W`): on every TCP stream, transfers of `-l` bytes one after
//! another, R % of them agent to client ("client reads") and W % client to agent ("client
//! writes"), spread evenly in a fixed pattern both ends derive from the spec alone.
//!
//! A mixed stream is one connection carrying both directions; the documents count it as two
//! streams, like `--bidir`: stream i (of `streams`) forward, the writes, and stream
//! `streams + i` reverse, the reads, both on the same connection. This room owns the type, its
//! parsing, the pattern and what the mix changes in a [`TcpSpec`]'s stream layout.

use super::{Direction, SpecError, TcpSpec};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Shares of transfers per direction, in percent; they add up to 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    /// Transfers from the agent to the client (the client reads), percent.
    pub read_percent: u8,
    /// Transfers from the client to the agent (the client writes), percent.
    pub write_percent: u8,
}

impl Mix {
    pub fn validate(&self) -> Result<(), SpecError> {
        if u16::from(self.read_percent) + u16::from(self.write_percent) != 100 {
            return Err(SpecError::Conflict(format!(
                "--mix {self}: the read and write shares must add up to 100"
            )));
        }
        Ok(())
    }

    /// The order of transfers, from the first.
    pub fn pattern(&self) -> MixPattern {
        MixPattern {
            phase: 0,
            read_percent: u32::from(self.read_percent),
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.read_percent, self.write_percent)
    }
}

impl FromStr for Mix {
    type Err = String;

    /// `R:W`, two whole percentages adding up to 100: `70:30`, `0:100`.
    fn from_str(s: &str) -> Result<Mix, String> {
        let bad = || format!("'{s}' is not R:W, two whole percentages adding up to 100 (70:30, 0:100)");
        let (r, w) = s.split_once(':').ok_or_else(bad)?;
        let (r, w): (u8, u8) = (
            r.trim().parse().map_err(|_| bad())?,
            w.trim().parse().map_err(|_| bad())?,
        );
        let mix = Mix {
            read_percent: r,
            write_percent: w,
        };
        mix.validate().map_err(|_| bad())?;
        Ok(mix)
    }
}

/// Which way each transfer goes: transfer k is a read when `(k x R) mod 100 < R`, which spreads
/// the reads evenly (70:30 gives R W R R W R R W R R) and gives exact shares over every
/// 100 / gcd(R, 100) transfers (10 for 70:30). Both ends step their own copy in lock-step; it
/// is `Copy` and steps without allocating.
#[derive(Clone, Copy, Debug)]
pub struct MixPattern {
    /// (k x R) mod 100 for the next transfer k.
    phase: u32,
    read_percent: u32,
}

impl MixPattern {
    /// Whether the next transfer is a read (agent to client); steps to the one after.
    pub fn next_is_read(&mut self) -> bool {
        let read = self.phase < self.read_percent;
        self.phase = (self.phase + self.read_percent) % 100;
        read
    }
}

impl TcpSpec {
    /// Data connections per agent: one per stream under `--mix` (each carries both
    /// directions), else one per counted stream.
    pub fn connections_per_agent(&self) -> usize {
        if self.mix.is_some() {
            usize::from(self.streams)
        } else {
            self.streams_per_agent()
        }
    }

    /// What `--mix` rules out: another direction (-R, --bidir) and `--depth` (a transfer waits
    /// for its answer, so nothing more is in flight).
    pub(super) fn validate_mix(&self) -> Result<(), SpecError> {
        let Some(m) = &self.mix else { return Ok(()) };
        m.validate()?;
        if self.direction != Direction::Send {
            return Err(SpecError::Conflict(
                "--mix sets both directions itself: drop -R / --bidir".into(),
            ));
        }
        if self.depth > 1 {
            return Err(SpecError::Conflict(
                "--mix waits for each transfer's answer: --depth does not apply".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::tests::Validate;

    fn reads(mix: &str, n: usize) -> String {
        let mut p = mix.parse::<Mix>().expect("valid").pattern();
        (0..n).map(|_| if p.next_is_read() { 'R' } else { 'W' }).collect()
    }

    #[test]
    fn the_pattern_spreads_reads_evenly_with_exact_shares() {
        assert_eq!(reads("70:30", 10), "RWRRWRRWRR");
        assert_eq!(reads("0:100", 5), "WWWWW");
        assert_eq!(reads("100:0", 5), "RRRRR");
        assert_eq!(reads("50:50", 6), "RWRWRW");
        for (mix, r) in [("70:30", 70), ("33:67", 33), ("1:99", 1), ("99:1", 99)] {
            let all = reads(mix, 1000);
            for window in all.as_bytes().chunks(100) {
                let got = window.iter().filter(|c| **c == b'R').count();
                assert_eq!(got, r, "{mix}: every 100 transfers hold exactly R reads");
            }
        }
    }

    #[test]
    fn mix_parses_r_colon_w_adding_up_to_100() {
        assert_eq!(
            "70:30".parse::<Mix>(),
            Ok(Mix {
                read_percent: 70,
                write_percent: 30
            })
        );
        assert_eq!("0:100".parse::<Mix>().map(|m| m.to_string()), Ok("0:100".into()));
        for bad in ["70", "50:60", "70:30:1", "-1:101", "a:b", ""] {
            let e = bad.parse::<Mix>().expect_err(bad);
            assert!(e.contains("R:W"), "{e}");
        }
    }

    #[test]
    fn a_mixed_stream_is_one_connection_counted_as_two_streams() {
        let mut s = TcpSpec::new();
        s.streams = 3;
        s.mix = Some("70:30".parse().expect("valid"));
        assert_eq!(s.connections_per_agent(), 3);
        assert_eq!(s.streams_per_agent(), 6);
        let forward: Vec<bool> = (0..6).map(|i| s.stream_flows_forward(i)).collect();
        assert_eq!(forward, [true, true, true, false, false, false]);
        assert_eq!(s.validate(), Ok(()));
        s.direction = Direction::Reverse;
        assert!(matches!(s.validate(), Err(SpecError::Conflict(_))));
        s.direction = Direction::Send;
        s.depth = 4;
        assert!(matches!(s.validate(), Err(SpecError::Conflict(_))));
    }
}
