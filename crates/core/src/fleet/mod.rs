//! Fleets: which cells a pattern tests and in which rounds they run, and the targets
//! that name many agents (`dns:NAME`, `@FILE`). Pure logic: the only I/O is expanding targets
//! (a DNS lookup, a file read). The controller (`crate::client`) runs the rounds; `plan check`
//! says how many there are and how long they take.
//!
//! A [`Selection`] is what the user asked (`--pattern`, the HOSTs, `--from`, `--pair`, or a
//! plan's `hosts`, `from`, `to`, `pairs`); its [`Layout`] is the hosts once each, the cells
//! (from, to) and the rounds ([`schedule`]): tests in one round run at once, no host in two.

mod schedule;
mod target;
#[cfg(test)]
mod tests;

pub use schedule::schedule;
pub use target::{MAX_HOST_FILE_BYTES, MAX_HOST_FILE_LINES, MAX_TARGETS, expand_all, expand_target};

use crate::result::Pattern;
use std::collections::BTreeSet;

/// Seconds allowed per round beyond its tests' own length in a plan's estimate: the
/// controller's clock exchanges with the round's agents, the agreed start a little ahead, the
/// third-party handshakes and each cell's result coming back.
pub const ROUND_SETUP_SECONDS: f64 = 1.0;

/// The most cells a fleet may have (a mesh of 3,000 hosts, 9 million cells, took the
/// controller past 1.6 GB before a test ran): a mesh of 128 hosts (16,256 cells, 254 rounds,
/// about 47 minutes of 10 s tests) fits.
pub const MAX_CELLS: u64 = 16_384;

/// Why a fleet cannot be laid out, in one line naming what is wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FleetError {
    #[error("{pattern} needs {what}")]
    Needs { pattern: Pattern, what: &'static str },
    #[error("{pattern} takes no {what}")]
    Unused { pattern: Pattern, what: &'static str },
    #[error("'{0}' is named twice")]
    Twice(String),
    #[error("'{0}' is paired with itself")]
    Itself(String),
    #[error("'{0}' is both a sender (from) and a receiver (a HOST, a plan's `to`)")]
    BothSides(String),
    #[error("the pair {0},{1} is named twice")]
    PairTwice(String, String),
    #[error("'{0}' is not a pair FROM,TO")]
    BadPair(String),
    #[error("--pair is for --pattern pairs")]
    PairsWithout,
    #[error("'{0}': the port is not a number from 1 to 65535")]
    BadPort(String),
    #[error("dns:{name}: {error}")]
    Resolve { name: String, error: String },
    #[error("dns:{0} resolves to no address")]
    NoAddress(String),
    #[error("host file {path}: {error}")]
    File { path: String, error: String },
    #[error("host file {0} names no host")]
    EmptyFile(String),
    #[error("{count} targets, more than the {max} targets one test or fleet may name")]
    TooManyTargets { count: usize, max: usize },
    #[error("{pattern} over these hosts makes {cells} cells, more than the {max} cells a fleet may have")]
    TooManyCells { pattern: Pattern, cells: u64, max: u64 },
    #[error("host file {path}, line {line}: {error}")]
    Line {
        path: String,
        line: usize,
        error: Box<FleetError>,
    },
}

/// What the user asked: a pattern over named agents.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    pub pattern: Pattern,
    /// The positional HOSTs: a mesh's hosts; the `to` side of disjoint, incast and outcast;
    /// unused by pairs.
    pub hosts: Vec<String>,
    /// The senders (`--from`, a plan's `from`) of disjoint, incast and outcast.
    pub from: Vec<String>,
    /// Pairs' (from, to).
    pub pairs: Vec<(String, String)>,
}

/// A selection laid out: hosts, cells and rounds.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Every name once: the rows (senders) first, then the columns not already a row, in the
    /// order given.
    pub hosts: Vec<String>,
    /// (from, to), indexes into `hosts`, row by row.
    pub cells: Vec<(usize, usize)>,
    /// Indexes into `cells`; the cells of one round run at once, no host in two of them.
    pub rounds: Vec<Vec<usize>>,
}

impl Selection {
    /// Expands targets (`dns:NAME`, `@FILE`; see [`expand_target`]) and reads `--pair FROM,TO`
    /// texts: the selection as a command line or a plan gives it.
    pub fn expand(
        pattern: Pattern,
        hosts: &[String],
        from: &[String],
        pairs: &[String],
        default_port: u16,
    ) -> Result<Selection, FleetError> {
        Ok(Selection {
            pattern,
            hosts: expand_all(hosts, default_port)?,
            from: expand_all(from, default_port)?,
            pairs: pairs.iter().map(|p| parse_pair(p)).collect::<Result<_, _>>()?,
        })
    }

    /// Checks the selection against its pattern and lays it out.
    pub fn layout(&self) -> Result<Layout, FleetError> {
        let p = self.pattern;
        if p != Pattern::Pairs && !self.pairs.is_empty() {
            return Err(FleetError::PairsWithout);
        }
        let (rows, columns): (Vec<&str>, Vec<&str>) = match p {
            Pattern::Mesh => {
                if !self.from.is_empty() {
                    return Err(FleetError::Unused {
                        pattern: p,
                        what: "from (--from): every host sends",
                    });
                }
                if self.hosts.len() < 2 {
                    return Err(FleetError::Needs {
                        pattern: p,
                        what: "at least 2 hosts",
                    });
                }
                once(&self.hosts)?;
                (names(&self.hosts), Vec::new())
            }
            Pattern::Disjoint | Pattern::Incast | Pattern::Outcast => {
                let (needs, from_ok, to_ok) = match p {
                    Pattern::Disjoint => (
                        "senders (--from, a plan's `from`) and receivers (HOSTs, a plan's `to`)",
                        !self.from.is_empty(),
                        !self.hosts.is_empty(),
                    ),
                    Pattern::Incast => (
                        "at least one sender (--from, a plan's `from`) and exactly one receiver (HOST, a plan's `to`)",
                        !self.from.is_empty(),
                        self.hosts.len() == 1,
                    ),
                    _ => (
                        "exactly one sender (--from, a plan's `from`) and at least one receiver (HOST, a plan's `to`)",
                        self.from.len() == 1,
                        !self.hosts.is_empty(),
                    ),
                };
                if !(from_ok && to_ok) {
                    return Err(FleetError::Needs {
                        pattern: p,
                        what: needs,
                    });
                }
                once(&self.from)?;
                once(&self.hosts)?;
                if let Some(both) = self.from.iter().find(|f| self.hosts.contains(f)) {
                    return Err(if p == Pattern::Disjoint {
                        FleetError::BothSides(both.clone())
                    } else {
                        FleetError::Itself(both.clone())
                    });
                }
                (names(&self.from), names(&self.hosts))
            }
            Pattern::Pairs => {
                if !self.hosts.is_empty() || !self.from.is_empty() {
                    return Err(FleetError::Unused {
                        pattern: p,
                        what: "HOST or from: name each pair (--pair FROM,TO, a plan's `pairs`)",
                    });
                }
                if self.pairs.is_empty() {
                    return Err(FleetError::Needs {
                        pattern: p,
                        what: "at least one pair",
                    });
                }
                let mut seen = BTreeSet::new();
                for (a, b) in &self.pairs {
                    if a == b {
                        return Err(FleetError::Itself(a.clone()));
                    }
                    if !seen.insert((a, b)) {
                        return Err(FleetError::PairTwice(a.clone(), b.clone()));
                    }
                }
                (
                    self.pairs.iter().map(|(a, _)| a.as_str()).collect(),
                    self.pairs.iter().map(|(_, b)| b.as_str()).collect(),
                )
            }
        };
        // Counted before any cell is made.
        let cells = match p {
            Pattern::Mesh => rows.len() as u64 * (rows.len() as u64).saturating_sub(1),
            Pattern::Pairs => self.pairs.len() as u64,
            _ => rows.len() as u64 * columns.len() as u64,
        };
        if cells > MAX_CELLS {
            return Err(FleetError::TooManyCells {
                pattern: p,
                cells,
                max: MAX_CELLS,
            });
        }
        let mut hosts: Vec<String> = Vec::new();
        for name in rows.iter().chain(&columns) {
            if !hosts.iter().any(|h| h == name) {
                hosts.push(name.to_string());
            }
        }
        let at = |name: &str| hosts.iter().position(|h| h == name).expect("every name is a host");
        let cells: Vec<(usize, usize)> = match p {
            Pattern::Mesh => (0..hosts.len())
                .flat_map(|i| (0..hosts.len()).filter(move |&j| j != i).map(move |j| (i, j)))
                .collect(),
            Pattern::Pairs => self.pairs.iter().map(|(a, b)| (at(a), at(b))).collect(),
            _ => rows
                .iter()
                .flat_map(|r| columns.iter().map(|c| (at(r), at(c))))
                .collect(),
        };
        let rounds = schedule(p, hosts.len(), &cells);
        Ok(Layout { hosts, cells, rounds })
    }
}

impl Layout {
    /// `--different-nodes`: leaves out the cells whose two hosts say they run on one node and
    /// schedules the rest again ([`schedule`]); returns how many cells were left out.
    /// `nodes[h]` is host h's node; a host that names none (its agent said nothing, or its clock
    /// could not be read) is on a node of its own, so its cells stay.
    pub fn keep_different_nodes(&mut self, pattern: Pattern, nodes: &[Option<String>]) -> usize {
        let before = self.cells.len();
        let node = |h: usize| nodes.get(h).and_then(Option::as_deref);
        self.cells.retain(|&(f, t)| match (node(f), node(t)) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        });
        self.rounds = schedule(pattern, self.hosts.len(), &self.cells);
        before - self.cells.len()
    }
}

fn names(list: &[String]) -> Vec<&str> {
    list.iter().map(String::as_str).collect()
}

/// Refuses a name given twice in one list.
fn once(list: &[String]) -> Result<(), FleetError> {
    let mut seen = BTreeSet::new();
    match list.iter().find(|n| !seen.insert(n.as_str())) {
        Some(twice) => Err(FleetError::Twice(twice.clone())),
        None => Ok(()),
    }
}

/// `FROM,TO` (`--pair`, a plan's `["FROM", "TO"]` joined): two non-empty names.
pub fn parse_pair(text: &str) -> Result<(String, String), FleetError> {
    match text.split(',').map(str::trim).collect::<Vec<_>>()[..] {
        [a, b] if !a.is_empty() && !b.is_empty() => Ok((a.to_string(), b.to_string())),
        _ => Err(FleetError::BadPair(text.to_string())),
    }
}

/// A pattern run's planned seconds: its rounds one after another, each its tests' length
/// (`per_test_seconds`) and [`ROUND_SETUP_SECONDS`] for the clock, the agreed start, the
/// handshakes and the results.
pub fn planned_seconds(rounds: usize, per_test_seconds: f64) -> f64 {
    rounds as f64 * (per_test_seconds + ROUND_SETUP_SECONDS)
}
