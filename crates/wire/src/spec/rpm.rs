//! The responsiveness test's spec (`linerate rpm`, draft-ietf-ippm-responsiveness-09): the
//! server's configuration URL, the directions loaded, the draft's parameters with its defaults,
//! the client's TLS and the timing (each stage's time limit and the draft's interval, ID).

use super::*;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// Which way the load-generating connections carry data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RpmDirection {
    /// Downloads and uploads at once: one responsiveness figure (the draft's and Apple's
    /// default).
    #[default]
    Both,
    /// Downloads only (GETs of the large object).
    Down,
    /// Uploads only (POSTs to the upload URL).
    Up,
    /// Downloads, then uploads: a figure for each.
    Sequential,
}

words!(RpmDirection, "a direction", Both => "both", Down => "down", Up => "up", Sequential => "sequential");

/// The draft's parameters (its section "Test Parameters"), with its defaults.
pub mod defaults {
    /// MAD: intervals in the moving average.
    pub const MAD: u32 = 4;
    /// ID: the interval, seconds (draft -09: 5 s).
    pub const INTERVAL_SECONDS: f64 = 5.0;
    /// TMP: the share kept by the single-sided trimmed mean, percent.
    pub const TRIM_PERCENT: f64 = 95.0;
    /// SDT: the standard deviation tolerance, percent of the moving average.
    pub const SDT_PERCENT: f64 = 5.0;
    /// INP: load-generating connections at the start.
    pub const INITIAL_CONNECTIONS: u32 = 1;
    /// INC: connections added at each interval.
    pub const ADD_CONNECTIONS: u32 = 1;
    /// MNP: the most load-generating connections (per direction).
    pub const MAX_CONNECTIONS: u32 = 16;
    /// MPS: the most probes per second (each a foreign and a self probe).
    pub const PROBES_PER_SECOND: u32 = 100;
    /// PTC: the share of the measured capacity the probes may take, percent.
    pub const PROBE_CAPACITY_PERCENT: f64 = 5.0;
}

/// A responsiveness test against a server that follows the draft (a linerate agent's https
/// port, Apple's, any other).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RpmSpec {
    /// The configuration document's URL (`https://HOST:PORT/.well-known/nq`).
    pub config_url: String,
    pub direction: RpmDirection,
    /// MAD: intervals the moving averages take.
    pub mad: u32,
    /// TMP: percent of the samples the trimmed mean keeps (the slowest rest is trimmed).
    pub trim_percent: f64,
    /// SDT: the standard deviation tolerance, percent of the current moving average.
    pub sdt_percent: f64,
    /// INP, INC and MNP: load-generating connections at the start, added per interval, at
    /// most (per direction).
    pub initial_connections: u32,
    pub add_connections: u32,
    pub max_connections: u32,
    /// MPS: the most probe pairs (a foreign and a self probe) started per second.
    pub probes_per_second: u32,
    /// PTC: the share of the measured goodput the probes may take, percent.
    pub probe_capacity_percent: f64,
    /// Foreign probes on the idle link before the load starts (the idle latency).
    pub idle_probes: u32,
    /// A probe (or the configuration's fetch) not answered in full within this is lost, ms.
    pub timeout_ms: u32,
    pub tls: TlsSpec,
    /// `limit`: the most seconds each stage runs (one stage for `both`, `up` or `down`, two for
    /// `sequential`); `interval_seconds`: the draft's ID.
    #[serde(flatten)]
    pub timing: Timing,
}

impl RpmSpec {
    /// The draft's defaults against `config_url`, 60 s at most per stage.
    pub fn new(config_url: &str) -> RpmSpec {
        use defaults::*;
        RpmSpec {
            config_url: config_url.to_string(),
            direction: RpmDirection::Both,
            mad: MAD,
            trim_percent: TRIM_PERCENT,
            sdt_percent: SDT_PERCENT,
            initial_connections: INITIAL_CONNECTIONS,
            add_connections: ADD_CONNECTIONS,
            max_connections: MAX_CONNECTIONS,
            probes_per_second: PROBES_PER_SECOND,
            probe_capacity_percent: PROBE_CAPACITY_PERCENT,
            idle_probes: 5,
            timeout_ms: 10_000,
            tls: TlsSpec::default(),
            timing: Timing {
                interval_seconds: INTERVAL_SECONDS,
                ..Timing::new(Limit::Seconds(60.0))
            },
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        if !self.config_url.starts_with("https://") && !self.config_url.starts_with("http://") {
            return Err(SpecError::Conflict(format!(
                "'{}' is not a configuration URL (https://HOST[:PORT]/.well-known/nq)",
                crate::text::peer_text(&self.config_url)
            )));
        }
        check("moving average distance (--mad)", f64::from(self.mad), 1.0, 100.0)?;
        check("trimmed mean percentage (--trim)", self.trim_percent, 1.0, 100.0)?;
        check("standard deviation tolerance (--sdt)", self.sdt_percent, 0.0, 100.0)?;
        check(
            "initial connections (--inp)",
            f64::from(self.initial_connections),
            1.0,
            256.0,
        )?;
        check("connections added (--inc)", f64::from(self.add_connections), 0.0, 256.0)?;
        check("most connections (--mnp)", f64::from(self.max_connections), 1.0, 256.0)?;
        if self.initial_connections > self.max_connections {
            return Err(SpecError::Conflict(format!(
                "--inp {} is more than --mnp {}",
                self.initial_connections, self.max_connections
            )));
        }
        check(
            "probes per second (--mps)",
            f64::from(self.probes_per_second),
            1.0,
            10_000.0,
        )?;
        check(
            "probe capacity percentage (--ptc)",
            self.probe_capacity_percent,
            0.01,
            100.0,
        )?;
        check("idle probes", f64::from(self.idle_probes), 0.0, 1000.0)?;
        check("timeout (ms)", f64::from(self.timeout_ms), 1.0, 600_000.0)?;
        if self.timing.interval_seconds <= 0.0 {
            return Err(SpecError::Conflict(
                "the interval (-i, the draft's ID) must be above 0".into(),
            ));
        }
        self.timing.validate(&TimingRules {
            count: None,
            sampled_streams: 0,
            ramp: false,
        })
    }

    /// The load's stages in order: the directions each loads (download, upload).
    pub fn stages(&self) -> Vec<(bool, bool)> {
        match self.direction {
            RpmDirection::Both => vec![(true, true)],
            RpmDirection::Down => vec![(true, false)],
            RpmDirection::Up => vec![(false, true)],
            RpmDirection::Sequential => vec![(true, false), (false, true)],
        }
    }
}

impl Serialize for RpmSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let t = &self.timing;
        let mut out = serializer.serialize_struct("RpmSpec", 19)?;
        keys!(
            out,
            self,
            config_url,
            direction,
            mad,
            trim_percent,
            sdt_percent,
            initial_connections,
            add_connections,
            max_connections,
            probes_per_second,
            probe_capacity_percent,
            idle_probes,
            timeout_ms,
            tls
        );
        keys!(out, t, limit, warmup_seconds, cooldown_seconds, interval_seconds);
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_drafts_and_read_back() {
        let s = RpmSpec::new("https://127.0.0.1:8443/.well-known/nq");
        s.validate().expect("the defaults are valid");
        assert_eq!((s.mad, s.trim_percent, s.sdt_percent), (4, 95.0, 5.0));
        assert_eq!(
            (s.initial_connections, s.add_connections, s.max_connections),
            (1, 1, 16)
        );
        assert_eq!((s.probes_per_second, s.probe_capacity_percent), (100, 5.0));
        assert_eq!(s.timing.interval_seconds, 5.0);
        let text = serde_json::to_string(&s).expect("serialises");
        assert!(text.contains(r#""direction":"both","mad":4,"#), "{text}");
        assert_eq!(serde_json::from_str::<RpmSpec>(&text).expect("parses"), s);
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut s = RpmSpec::new("ftp://x/");
        assert!(
            s.validate()
                .expect_err("no http")
                .to_string()
                .contains("not a configuration URL")
        );
        s.config_url = "https://x/.well-known/nq".into();
        s.initial_connections = 20;
        assert!(s.validate().expect_err("inp > mnp").to_string().contains("--inp 20"));
        s.initial_connections = 1;
        s.trim_percent = 0.0;
        assert!(s.validate().expect_err("trim").to_string().contains("--trim"));
        assert_eq!(RpmSpec::new("https://x/").stages().len(), 1);
        let seq = RpmSpec {
            direction: RpmDirection::Sequential,
            ..RpmSpec::new("https://x/")
        };
        assert_eq!(seq.stages(), vec![(true, false), (false, true)]);
    }
}
