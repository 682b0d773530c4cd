//! The fuzz harness's engine (tests only): mutations of real inputs, generated with
//! proptest, and a runner that counts inputs, the slowest one and the time spent. Crates above
//! reach it with the feature `testing` (linerate-results' stored documents and plans).
//!
//! In: seeds (whole control sessions and HTTP requests built from the real types by the
//! callers in `proto::fuzz` and `httpd::fuzz`) and a function that feeds one input to the
//! decoders and checks what they answer. Out: a panic on the first input that crashes a
//! decoder or breaks a property (proptest then shrinks it), else a summary on stderr.
//!
//! Mutations: bit flips, byte writes, truncation, insertion, splicing with another seed,
//! repetition, length prefixes anywhere from 0 to 2^32-1, deeply nested JSON and huge strings.
//! `LINERATE_FUZZ_CASES` sets the number of inputs per target (default [`DEFAULT_CASES`], the
//! short run of `cargo test`); docs/security.md gives the command of the long run and its
//! figures.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// Inputs per target in a plain `cargo test`.
pub const DEFAULT_CASES: u32 = 2_000;
/// An input taking longer than this to decode is a hang (far beyond any real one: the slowest
/// legitimate input, 1 MiB of JSON string, decodes in milliseconds even unoptimised).
const HANG: Duration = Duration::from_secs(10);

/// One change to an input.
#[derive(Clone, Debug)]
pub enum Mutation {
    FlipBit {
        at: usize,
        bit: u8,
    },
    SetByte {
        at: usize,
        value: u8,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    /// Bytes `from..from+len` of seed `seed` written over the input at `at`.
    Splice {
        seed: usize,
        from: usize,
        len: usize,
        at: usize,
    },
    /// Bytes `at..at+len` repeated `times` more times in place.
    Repeat {
        at: usize,
        len: usize,
        times: usize,
    },
    /// A big-endian u32 written at `at` (a frame's length prefix when `at` is one).
    LengthPrefix {
        at: usize,
        value: u32,
    },
    /// `depth` opening brackets or braces (then as many closing ones when `closed`) at `at`.
    Nest {
        at: usize,
        depth: usize,
        object: bool,
        closed: bool,
    },
    /// A JSON string of `len` bytes of `fill` inserted at `at`.
    HugeString {
        at: usize,
        len: usize,
        fill: u8,
    },
}

/// Length prefixes worth trying most: the edges of every limit.
const EDGES: [u32; 10] = [
    0,
    1,
    4,
    (1 << 20) - 1,
    1 << 20,
    (1 << 20) + 1,
    128 << 20,
    (128 << 20) + 1,
    i32::MAX as u32,
    u32::MAX,
];

/// A size below 2^`bits`, every power of two as likely as the next (so most stay small and
/// the largest still come up often).
fn sized(bits: u32) -> impl Strategy<Value = usize> {
    (0..bits, any::<u32>()).prop_map(|(e, jitter)| (1usize << e) + jitter as usize % (1usize << e))
}

fn mutation(seeds: usize) -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        4 => (at, 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        3 => (at, any::<u8>()).prop_map(|(at, value)| Mutation::SetByte { at, value }),
        2 => at.prop_map(|at| Mutation::Truncate { at }),
        2 => (at, prop::collection::vec(any::<u8>(), 1..16)).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        2 => (0..seeds.max(1), at, 1usize..512, at)
            .prop_map(|(seed, from, len, at)| Mutation::Splice { seed, from, len, at }),
        1 => (at, 1usize..64, 1usize..64).prop_map(|(at, len, times)| Mutation::Repeat { at, len, times }),
        2 => (at, prop_oneof![prop::sample::select(&EDGES[..]), any::<u32>()])
            .prop_map(|(at, value)| Mutation::LengthPrefix { at, value }),
        1 => (at, sized(17), any::<bool>(), any::<bool>())
            .prop_map(|(at, depth, object, closed)| Mutation::Nest { at, depth, object, closed }),
        1 => (at, sized(21), prop::sample::select(&b"a\\\x1b\"\x00\xff"[..]))
            .prop_map(|(at, len, fill)| Mutation::HugeString { at, len, fill }),
    ]
}

/// A seed and the mutations made to it: the input of one case.
pub fn input(seeds: usize) -> impl Strategy<Value = (usize, Vec<Mutation>)> {
    (0..seeds.max(1), prop::collection::vec(mutation(seeds), 0..6))
}

/// `seeds[seed]` with `mutations` applied in turn.
pub fn apply(seeds: &[Vec<u8>], seed: usize, mutations: &[Mutation]) -> Vec<u8> {
    let mut b = seeds[seed % seeds.len()].clone();
    for m in mutations {
        // Positions are taken modulo the input's length (plus one: the end is a place too).
        let pos = |at: usize, len: usize| at % (len + 1);
        match m {
            Mutation::FlipBit { at, bit } if !b.is_empty() => {
                let i = at % b.len();
                b[i] ^= 1 << bit;
            }
            Mutation::SetByte { at, value } if !b.is_empty() => {
                let i = at % b.len();
                b[i] = *value;
            }
            Mutation::Truncate { at } => b.truncate(pos(*at, b.len())),
            Mutation::Insert { at, bytes } => {
                let i = pos(*at, b.len());
                b.splice(i..i, bytes.iter().copied());
            }
            Mutation::Splice { seed, from, len, at } => {
                let other = &seeds[seed % seeds.len()];
                let from = pos(*from, other.len());
                let piece = &other[from..(from + len).min(other.len())];
                let i = pos(*at, b.len());
                let end = (i + piece.len()).min(b.len());
                b.splice(i..end, piece.iter().copied());
            }
            Mutation::Repeat { at, len, times } => {
                let i = pos(*at, b.len());
                let piece = b[i..(i + len).min(b.len())].to_vec();
                let copies: Vec<u8> = piece.iter().copied().cycle().take(piece.len() * times).collect();
                b.splice(i..i, copies);
            }
            Mutation::LengthPrefix { at, value } => {
                let i = pos(*at, b.len());
                let end = (i + 4).min(b.len());
                b.splice(i..end, value.to_be_bytes());
            }
            Mutation::Nest {
                at,
                depth,
                object,
                closed,
            } => {
                let (open, close): (&[u8], &[u8]) = if *object { (b"{\"a\":", b"}") } else { (b"[", b"]") };
                let mut nest: Vec<u8> = open.repeat(*depth);
                if *closed {
                    nest.extend(b"0");
                    nest.extend(close.repeat(*depth));
                }
                let i = pos(*at, b.len());
                b.splice(i..i, nest);
            }
            Mutation::HugeString { at, len, fill } => {
                let mut s = Vec::with_capacity(len + 2);
                s.push(b'"');
                s.resize(len + 1, *fill);
                s.push(b'"');
                let i = pos(*at, b.len());
                b.splice(i..i, s);
            }
            Mutation::FlipBit { .. } | Mutation::SetByte { .. } => {}
        }
    }
    b
}

/// The number of inputs per target: `LINERATE_FUZZ_CASES`, else [`DEFAULT_CASES`].
pub fn cases() -> u32 {
    cases_or(DEFAULT_CASES)
}

/// `LINERATE_FUZZ_CASES`, else `default` (a target whose inputs cost more in a debug build).
pub fn cases_or(default: u32) -> u32 {
    std::env::var("LINERATE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// What one run of a target did.
#[derive(Debug)]
pub struct Figures {
    pub inputs: u64,
    pub seconds: f64,
    pub slowest: Duration,
    pub input_bytes: u64,
}

/// Feeds `cases()` mutated inputs to `check`, which panics (or returns what went wrong) when a
/// decoder misbehaves; fails on the first such input, shrunk, or one that takes [`HANG`].
pub fn run(name: &str, seeds: &[Vec<u8>], check: impl Fn(&[u8]) -> Result<(), String>) -> Figures {
    run_cases(name, seeds, cases(), check)
}

/// [`run`] over `cases` inputs.
pub fn run_cases(name: &str, seeds: &[Vec<u8>], cases: u32, check: impl Fn(&[u8]) -> Result<(), String>) -> Figures {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let (inputs, slowest, bytes) = (Cell::new(0u64), Cell::new(Duration::ZERO), Cell::new(0u64));
    let start = Instant::now();
    let outcome = runner.run(&input(seeds.len()), |(seed, mutations)| {
        let data = apply(seeds, seed, &mutations);
        let t = Instant::now();
        check(&data).map_err(TestCaseError::fail)?;
        let took = t.elapsed();
        prop_assert!(took < HANG, "{} bytes took {took:?}", data.len());
        inputs.set(inputs.get() + 1);
        bytes.set(bytes.get() + data.len() as u64);
        slowest.set(slowest.get().max(took));
        Ok(())
    });
    let figures = Figures {
        inputs: inputs.get(),
        seconds: start.elapsed().as_secs_f64(),
        slowest: slowest.get(),
        input_bytes: bytes.get(),
    };
    if let Err(e) = outcome {
        panic!("fuzz target {name}: {e}");
    }
    report(name, &figures);
    figures
}

/// The figures of a run on stderr (`--nocapture` shows them), with the process's peak RSS.
#[allow(clippy::print_stderr)]
fn report(name: &str, f: &Figures) {
    let peak_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default();
    eprintln!(
        "fuzz {name}: {} inputs ({} MB) in {:.1} s = {:.0} inputs/s; slowest {:?}; process peak RSS {peak_kb}",
        f.inputs,
        f.input_bytes / 1_000_000,
        f.seconds,
        f.inputs as f64 / f.seconds.max(1e-9),
        f.slowest
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_mutations_stay_in_bounds_and_change_inputs() {
        let seeds = vec![b"abcdef".to_vec(), Vec::new()];
        let m = [
            Mutation::FlipBit { at: 7, bit: 0 },
            Mutation::LengthPrefix {
                at: 1000,
                value: u32::MAX,
            },
            Mutation::Splice {
                seed: 0,
                from: 3,
                len: 100,
                at: 2,
            },
            Mutation::Repeat {
                at: 0,
                len: 2,
                times: 2,
            },
        ];
        let out = apply(&seeds, 0, &m);
        assert_eq!(out, b"acacacdeff\xff\xff\xff\xff");
        // An empty seed takes every mutation without a panic.
        let all = [
            Mutation::Truncate { at: 5 },
            Mutation::SetByte { at: 1, value: 1 },
            Mutation::Nest {
                at: 3,
                depth: 3,
                object: false,
                closed: true,
            },
            Mutation::HugeString {
                at: 0,
                len: 3,
                fill: b'x',
            },
        ];
        assert_eq!(apply(&seeds, 1, &all), b"\"xxx\"[[[0]]]");
    }
}
