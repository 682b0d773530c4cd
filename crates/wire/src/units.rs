//! Units that users type and read: byte sizes (binary prefixes, K = 1024), bit rates
//! (decimal prefixes, k = 1000, 1 Mbit = 10^6 bits) and spans of time (a bare number is
//! seconds, everywhere). Parsing and display live here only.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A number of bytes. Parses `537600`, `64K`, `64KiB`, `1M`, `1.5M`, `2G` (K = 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ByteSize(pub u64);

/// A rate in bits per second. Parses `200mbit`, `200M`, `1G`, `1gbit`, `9.5g`, `100k` (k = 1000).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitRate(pub f64);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UnitError {
    #[error("'{0}' is not a size (examples: 537600, 64K, 1M)")]
    Size(String),
    #[error("'{0}' is not a rate (examples: 200mbit, 1G, 9.5gbit)")]
    Rate(String),
    #[error("'{0}' is not a CPU list (examples: 0, 0,2, 1-3)")]
    CpuList(String),
    #[error("'{0}' is not a time (examples: 10 or 10s, 250ms, 100us, 5m, 1.5h; a bare number is seconds)")]
    Time(String),
}

/// A span of time as users type it: `10` (a bare number is seconds), `10s`, `250ms`, `100us` or
/// `100µs`, `5m`, `1.5h`. Never negative; nanosecond resolution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeSpan(pub Duration);

impl TimeSpan {
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }

    pub fn as_micros(self) -> u128 {
        self.0.as_micros()
    }
}

impl From<TimeSpan> for Duration {
    fn from(t: TimeSpan) -> Duration {
        t.0
    }
}

impl FromStr for TimeSpan {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || UnitError::Time(s.to_string());
        let t = s.trim();
        // The unit is the trailing letters; what is before them is the number (`1e3` stays whole).
        let num = t.trim_end_matches(|c: char| c.is_alphabetic());
        let unit = &t[num.len()..];
        let scale = match unit {
            "" | "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(err()),
        };
        let n: f64 = num.trim().parse().map_err(|_| err())?;
        if !n.is_finite() || n < 0.0 {
            return Err(err());
        }
        Duration::try_from_secs_f64(n * scale).map(TimeSpan).map_err(|_| err())
    }
}

impl fmt::Display for TimeSpan {
    /// In the largest unit the span reaches (`10 s`, `1.5 s`, `250 ms`, `100 us`), with three
    /// decimals at most.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        let (value, unit) = if ns >= 1_000_000_000 || ns == 0 {
            (self.0.as_secs_f64(), "s")
        } else if ns >= 1_000_000 {
            (ns as f64 / 1e6, "ms")
        } else {
            (ns as f64 / 1e3, "us")
        };
        // Three decimals at most, trailing zeros dropped: 1.5 s, 0.25 ms, 10 s.
        let text = format!("{value:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        write!(f, "{text} {unit}")
    }
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    let value: f64 = num.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Some((value, suffix.trim()))
}

impl FromStr for ByteSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || UnitError::Size(s.to_string());
        let (value, suffix) = split_number(s).ok_or_else(err)?;
        let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(err()),
        };
        let bytes = value * mult as f64;
        if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
            return Err(err());
        }
        Ok(ByteSize(bytes as u64))
    }
}

impl fmt::Display for ByteSize {
    /// Exact when a binary prefix divides evenly (`128 KiB`), otherwise plain bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 4] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (size, name) in UNITS {
            if self.0 >= size && self.0.is_multiple_of(size) {
                return write!(f, "{} {name}", self.0 / size);
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl FromStr for BitRate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || UnitError::Rate(s.to_string());
        let (value, suffix) = split_number(s).ok_or_else(err)?;
        let lower = suffix.to_ascii_lowercase();
        let prefix = lower
            .strip_suffix("bit/s")
            .or_else(|| lower.strip_suffix("bps"))
            .or_else(|| lower.strip_suffix("bit"))
            .unwrap_or(&lower);
        let mult = match prefix {
            "" => 1e0,
            "k" => 1e3,
            "m" => 1e6,
            "g" => 1e9,
            "t" => 1e12,
            _ => return Err(err()),
        };
        Ok(BitRate(value * mult))
    }
}

impl fmt::Display for BitRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.0;
        if bps >= 1e9 {
            write!(f, "{:.3} Gbit/s", bps / 1e9)
        } else if bps >= 1e6 {
            write!(f, "{:.3} Mbit/s", bps / 1e6)
        } else if bps >= 1e3 {
            write!(f, "{:.3} kbit/s", bps / 1e3)
        } else {
            write!(f, "{bps:.0} bit/s")
        }
    }
}

/// A list of CPU numbers, as `--cpus` takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl FromStr for CpuList {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_cpu_list(s).map(CpuList)
    }
}

/// Parses a CPU list as the kernel writes them: `0`, `0,2`, `1-3`, `0-1,4`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, UnitError> {
    let err = || UnitError::CpuList(s.to_string());
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| err())?;
            let b: usize = b.trim().parse().map_err(|_| err())?;
            if b < a || b - a > 4096 {
                return Err(err());
            }
            cpus.extend(a..=b);
        } else {
            cpus.push(part.parse().map_err(|_| err())?);
        }
    }
    if cpus.is_empty() {
        return Err(err());
    }
    Ok(cpus)
}

/// The spacing, in nanoseconds, that paces events of `each` units at `per_second` units a second:
/// `each` / `per_second` seconds, rounded to the nearest nanosecond and at least 1. The one rule
/// every rate-to-gap conversion takes (a UDP stream's `--rate` or iperf3's `-b`, rr's `--tps`),
/// so that the same rate asked two ways paces the same. At least 1 because a gap of 0 means "as
/// fast as possible": a rate asked for stays paced however high it is. A rate of 0 or less (or
/// not a number) asks for no pacing: 0. Too slow a rate saturates at `u64::MAX` (the specs'
/// checks refuse it).
pub fn spacing_ns(each: f64, per_second: f64) -> u64 {
    if per_second.is_nan() || per_second <= 0.0 {
        return 0;
    }
    (each * 1e9 / per_second).round().max(1.0) as u64
}

/// 1,234,567.891 style: thousands separated, fixed decimals.
pub fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    if v < 0.0 { format!("-{out}") } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_rounds_to_the_nearest_ns_and_stays_paced() {
        // 1000-byte datagrams at 8 Mbit/s: exactly 1 ms.
        assert_eq!(spacing_ns(8000.0, 8e6), 1_000_000);
        // 8000 bits at 3 Mbit/s is 2,666,666.67 ns: rounded up, where truncating gave ...666.
        assert_eq!(spacing_ns(8000.0, 3e6), 2_666_667);
        // Exactly half a nanosecond rounds away from zero: 1 unit at 4e8/s is 2.5 ns.
        assert_eq!(spacing_ns(1.0, 4e8), 3);
        assert_eq!(spacing_ns(1.0, 1e9 / 2.4), 2, "2.4 ns rounds down");
        // So high a rate that the spacing would round (or truncate) to 0: still paced, 1 ns.
        assert_eq!(spacing_ns(8.0, 1e13), 1, "0.0008 ns");
        assert_eq!(spacing_ns(8.0, f64::MAX), 1);
        assert_eq!(spacing_ns(8.0, f64::INFINITY), 1);
        // No rate: no pacing.
        assert_eq!(spacing_ns(8000.0, 0.0), 0);
        assert_eq!(spacing_ns(8000.0, -1.0), 0);
        assert_eq!(spacing_ns(8000.0, f64::NAN), 0);
        // So slow a rate that the spacing passes u64: saturates (a spec's check refuses it).
        assert_eq!(spacing_ns(8.0 * f64::from(1u32 << 30), 1e-9), u64::MAX);
        // rr's transactions a second: one each.
        assert_eq!(spacing_ns(1.0, 1000.0), 1_000_000);
        assert_eq!(spacing_ns(1.0, 7.0), 142_857_143, "142,857,142.86 ns, rounded");
        assert_eq!(spacing_ns(1.0, 10e6), 100);
    }

    #[test]
    fn sizes_parse_with_binary_prefixes() {
        assert_eq!("537600".parse::<ByteSize>(), Ok(ByteSize(537_600)));
        assert_eq!("64K".parse::<ByteSize>(), Ok(ByteSize(65_536)));
        assert_eq!("64KiB".parse::<ByteSize>(), Ok(ByteSize(65_536)));
        assert_eq!("1M".parse::<ByteSize>(), Ok(ByteSize(1 << 20)));
        assert_eq!("1.5m".parse::<ByteSize>(), Ok(ByteSize(3 << 19)));
        assert_eq!("2G".parse::<ByteSize>(), Ok(ByteSize(2 << 30)));
        assert_eq!("0".parse::<ByteSize>(), Ok(ByteSize(0)));
    }

    #[test]
    fn sizes_reject_nonsense() {
        for bad in ["", "K", "-1", "1.3", "12 parsecs", "1e3", "0x10"] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn sizes_display_exactly() {
        assert_eq!(ByteSize(131_072).to_string(), "128 KiB");
        assert_eq!(ByteSize(537_600).to_string(), "525 KiB");
        assert_eq!(ByteSize(1000).to_string(), "1000 B");
        assert_eq!(ByteSize(3 << 30).to_string(), "3 GiB");
    }

    #[test]
    fn rates_parse_with_decimal_prefixes() {
        assert_eq!("200mbit".parse::<BitRate>(), Ok(BitRate(200e6)));
        assert_eq!("200M".parse::<BitRate>(), Ok(BitRate(200e6)));
        assert_eq!("1G".parse::<BitRate>(), Ok(BitRate(1e9)));
        assert_eq!("9.5gbit".parse::<BitRate>(), Ok(BitRate(9.5e9)));
        assert_eq!("100kbps".parse::<BitRate>(), Ok(BitRate(100e3)));
        assert_eq!("5000".parse::<BitRate>(), Ok(BitRate(5000.0)));
        assert!("fast".parse::<BitRate>().is_err());
        assert!("10 furlongs".parse::<BitRate>().is_err());
    }

    #[test]
    fn rates_display_with_unit() {
        assert_eq!(BitRate(9_858_228_000.0).to_string(), "9.858 Gbit/s");
        assert_eq!(BitRate(191_300_000.0).to_string(), "191.300 Mbit/s");
    }

    fn time(s: &str) -> Result<Duration, UnitError> {
        s.parse::<TimeSpan>().map(|t| t.0)
    }

    #[test]
    fn times_parse_every_suffix() {
        assert_eq!(time("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(time("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(time("32.5ms"), Ok(Duration::from_micros(32_500)));
        assert_eq!(time("100us"), Ok(Duration::from_micros(100)));
        assert_eq!(time("100µs"), Ok(Duration::from_micros(100)));
        assert_eq!(time("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(time("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(time(" 2s "), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn a_bare_number_is_seconds() {
        assert_eq!(time("10"), Ok(Duration::from_secs(10)));
        assert_eq!(time("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(time("0"), Ok(Duration::ZERO));
        assert_eq!(time("1e3"), Ok(Duration::from_secs(1000)));
        assert_eq!(time("0.3").map(|d| d.as_secs_f64()), Ok(0.3));
    }

    #[test]
    fn bad_times_are_one_line_errors() {
        for bad in [
            "",
            "soon",
            "ms",
            "-1",
            "-1s",
            "10 parsecs",
            "10ks",
            "inf",
            "NaN",
            "1e400",
            "10d",
        ] {
            let e = bad.parse::<TimeSpan>().expect_err(bad).to_string();
            assert!(e.contains("is not a time"), "{bad}: {e}");
            assert_eq!(e.lines().count(), 1, "{bad}: {e}");
        }
    }

    #[test]
    fn times_display_in_a_fitting_unit() {
        let show = |s: &str| s.parse::<TimeSpan>().expect(s).to_string();
        assert_eq!(show("10"), "10 s");
        assert_eq!(show("1.5s"), "1.5 s");
        assert_eq!(show("250ms"), "250 ms");
        assert_eq!(show("500us"), "500 us");
        assert_eq!(show("100us"), "100 us");
        assert_eq!(show("1.5us"), "1.5 us");
        assert_eq!(show("0"), "0 s");
        assert_eq!(show("4m"), "240 s");
    }

    #[test]
    fn cpu_lists_parse_like_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0"), Ok(vec![0]));
        assert_eq!(parse_cpu_list("0,2"), Ok(vec![0, 2]));
        assert_eq!(parse_cpu_list("1-3"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_cpu_list("0-1,4"), Ok(vec![0, 1, 4]));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("").is_err());
    }
}
