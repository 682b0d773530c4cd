//! The HTTP load test's spec.

use super::*;
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// An HTTP load test (Avalanche's simulated users): the client fetches the URLs from any HTTP
/// server; an agent on the server's host, when there is one, samples that host over the same
/// window.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HttpSpec {
    /// `http://HOST[:PORT]/PATH`, fetched in turn by each user.
    pub urls: Vec<String>,
    /// Simulated users (closed loop), or the most requests in flight (open loop).
    pub users: u32,
    /// A closed-loop user's pause between a response and its next request, ms.
    pub think_ms: f64,
    /// Keep connections open between requests; false: a new connection per request.
    pub keepalive: bool,
    /// A ramp (users start evenly over its warm-up, which the figures leave out), then the full
    /// load for its limit (`-t`), the last `--cooldown` seconds of it left out of the figures
    /// (the server host's samples still cover them). Written as `ramp_seconds`,
    /// `duration_seconds`, `cooldown_seconds` and `interval_seconds`.
    #[serde(flatten)]
    pub timing: Timing,
    /// Open loop: requests per second in all, each timed from its scheduled start.
    pub rate: Option<f64>,
    /// A request not answered in full this long after it started is a timeout, ms.
    pub timeout_ms: u32,
    /// Worker threads on the client; 0 = one per online CPU (at most one per user).
    pub threads: u16,
    pub cpus: Vec<usize>,
    /// The workers' scheduling policy (`--sched`); written only when not `normal`, so a
    /// document without the key ran `normal` (as all did before it).
    #[serde(default)]
    pub sched: Sched,
    /// How `https://` URLs are fetched; absent when no URL is https (and from documents
    /// written before HTTPS was measured).
    #[serde(default)]
    pub tls: Option<TlsSpec>,
    /// HTTP/2 (`--http2`): ALPN `h2` on https URLs, h2c by prior knowledge on
    /// cleartext ones; absent: HTTP/1.1 (and in documents before it).
    #[serde(default)]
    pub http2: Option<Http2Spec>,
    /// `--probe`: latency probes beside the load (idle, loaded, recovery); None = none. Absent
    /// from documents written before it (and when None).
    #[serde(default)]
    pub probe: Option<ProbeSpec>,
}

/// The client's HTTP/2: each user one connection with up to `streams` requests in
/// flight on it (fewer when the server's SETTINGS_MAX_CONCURRENT_STREAMS is lower).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http2Spec {
    /// Concurrent streams per connection asked for (`--streams`).
    pub streams: u32,
}

/// The client's TLS for `https://` URLs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TlsSpec {
    /// Accept any certificate (`--insecure`).
    pub insecure: bool,
    /// The CA certificates trusted (`--cacert`, PEM); null: the system's roots.
    pub cacert: Option<std::path::PathBuf>,
    /// The only version offered (`--tls-version`); null: 1.2 and 1.3.
    pub version: Option<TlsVersion>,
    /// Resume sessions (tickets or TLS 1.2 session IDs), each user its own, as a browser does.
    pub resume: bool,
}

impl Default for TlsSpec {
    fn default() -> Self {
        TlsSpec {
            insecure: false,
            cacert: None,
            version: None,
            resume: true,
        }
    }
}

/// A TLS protocol version, written `"1.2"` or `"1.3"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    V1_2,
    #[serde(rename = "1.3")]
    V1_3,
}

impl HttpSpec {
    /// One keep-alive user fetching `url` for `seconds`, no think time, a 1 s timeout, no
    /// interval samples: the smallest load (a baseline's, a test's).
    pub fn one_user(url: &str, seconds: f64) -> HttpSpec {
        HttpSpec {
            urls: vec![url.to_string()],
            users: 1,
            think_ms: 0.0,
            keepalive: true,
            timing: Timing {
                interval_seconds: 0.0,
                ..Timing::ramp(0.0, seconds)
            },
            rate: None,
            timeout_ms: 1000,
            threads: 0,
            cpus: Vec::new(),
            sched: Default::default(),
            tls: None,
            http2: None,
            probe: None,
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        check("URLs", self.urls.len() as f64, 1.0, 1024.0)?;
        check("users", f64::from(self.users), 1.0, 100_000.0)?;
        check("think time (ms)", self.think_ms, 0.0, 3.6e6)?;
        self.timing.validate(&TimingRules {
            count: None,
            sampled_streams: 0,
            ramp: true,
        })?;
        if let Some(r) = self.rate {
            check("rate (requests/s)", r, 0.001, 10e6)?;
        }
        check("timeout (ms)", f64::from(self.timeout_ms), 1.0, 3.6e6)?;
        check("threads", f64::from(self.threads), 0.0, 1024.0)?;
        check_cpus(&self.cpus)?;
        if let Some(h2) = &self.http2 {
            check("streams per connection", f64::from(h2.streams), 1.0, 1000.0)?;
        }
        Ok(())
    }
}

impl Serialize for HttpSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let t = &self.timing;
        let seconds = t
            .limit
            .seconds()
            .ok_or_else(|| S::Error::custom("an http test runs for a time, not a count"))?;
        let mut out = serializer.serialize_struct(
            "HttpSpec",
            12 + usize::from(self.sched != Sched::Normal)
                + usize::from(self.tls.is_some())
                + usize::from(self.http2.is_some())
                + usize::from(self.probe.is_some()),
        )?;
        keys!(out, self, urls, users, think_ms, keepalive);
        out.serialize_field("ramp_seconds", &t.warmup_seconds)?;
        out.serialize_field("duration_seconds", &seconds)?;
        keys!(out, t, cooldown_seconds);
        keys!(out, self, rate, timeout_ms, threads, cpus);
        // Only when not the kernel's default: documents before it read as they always did.
        if self.sched != Sched::Normal {
            out.serialize_field("sched", &self.sched)?;
        }
        keys!(out, t, interval_seconds);
        // Only with https URLs: a cleartext test's options read as they always did.
        if let Some(tls) = &self.tls {
            out.serialize_field("tls", tls)?;
        }
        // Only with --http2: an HTTP/1.1 test's options read as they always did.
        if let Some(h2) = &self.http2 {
            out.serialize_field("http2", h2)?;
        }
        // Only with probes.
        if let Some(probe) = &self.probe {
            out.serialize_field("probe", probe)?;
        }
        out.end()
    }
}
