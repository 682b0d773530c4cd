//! `linerate rpm TARGET`: the responsiveness test of draft-ietf-ippm-responsiveness against a
//! server that follows it (a linerate agent's https port, or any other), its parameters as
//! flags with the draft's defaults.

use super::common::{OutputArgs, RepeatArgs};
use super::usage::{Usage, usage};
use linerate_core::spec::{Limit, RpmDirection, RpmSpec, Timing, rpm_defaults as d};
use linerate_core::units::TimeSpan;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate rpm 10.0.0.2:8443 --insecure\n  linerate rpm https://10.0.0.2:8443/.well-known/nq --cacert ca.pem --direction sequential\n  linerate rpm 10.0.0.2:8443 --insecure -i 1s -t 20s --json"
)]
pub struct RpmArgs {
    /// The server: its configuration URL (`https://HOST[:PORT]/.well-known/nq`), or a linerate
    /// agent's `HOST[:PORT]` (its https port, serve --https-port; default port 443)
    #[arg(value_name = "URL|HOST[:PORT]")]
    pub target: String,

    /// What loads the link: both (downloads and uploads at once), down, up, or sequential
    /// (down, then up: a figure for each)
    #[arg(long, value_name = "WAY", default_value = "both")]
    pub direction: RpmDirection,

    /// The most time each stage runs when it does not become stable sooner (30s, 2m)
    #[arg(short = 't', long = "time", value_name = "DURATION", default_value = "60s")]
    pub time: TimeSpan,

    /// ID: the interval at which connections are added and stability is judged (the draft: 5s)
    #[arg(short = 'i', long = "interval", value_name = "DURATION", default_value = "5s")]
    pub interval: TimeSpan,

    /// MAD: intervals the moving averages and the trimmed means take
    #[arg(long, value_name = "N", default_value_t = d::MAD)]
    pub mad: u32,

    /// TMP: percent of the probes the trimmed mean keeps (the slowest rest is dropped)
    #[arg(long = "trim", value_name = "PERCENT", default_value_t = d::TRIM_PERCENT)]
    pub trim: f64,

    /// SDT: the standard deviation tolerance, percent of the moving average
    #[arg(long, value_name = "PERCENT", default_value_t = d::SDT_PERCENT)]
    pub sdt: f64,

    /// INP: load-generating connections at the start (per direction)
    #[arg(long, value_name = "N", default_value_t = d::INITIAL_CONNECTIONS)]
    pub inp: u32,

    /// INC: load-generating connections added at each interval (per direction)
    #[arg(long, value_name = "N", default_value_t = d::ADD_CONNECTIONS)]
    pub inc: u32,

    /// MNP: the most load-generating connections (per direction)
    #[arg(long, value_name = "N", default_value_t = d::MAX_CONNECTIONS)]
    pub mnp: u32,

    /// MPS: the most probe pairs (a foreign and a self probe) per second
    #[arg(long, value_name = "N", default_value_t = d::PROBES_PER_SECOND)]
    pub mps: u32,

    /// PTC: the share of the measured goodput the probes may take, percent
    #[arg(long, value_name = "PERCENT", default_value_t = d::PROBE_CAPACITY_PERCENT)]
    pub ptc: f64,

    /// Probes on the idle link before the load (each kind), for the idle latency
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub idle_probes: u32,

    /// A probe, or the configuration's fetch, not answered in full within this is lost
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: TimeSpan,

    #[command(flatten)]
    pub tls: super::tls::TlsArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub repeat: RepeatArgs,
}

impl RpmArgs {
    /// The configuration URL: TARGET itself when it is a URL, else a linerate agent's
    /// `https://HOST:PORT/.well-known/nq`.
    pub fn config_url(&self) -> Result<String, Usage> {
        let t = self.target.trim();
        if t.starts_with("https://") || t.starts_with("http://") {
            return Ok(t.to_string());
        }
        if t.is_empty() || t.contains('/') || t.contains("://") {
            return Err(usage!(
                "'{}' is neither a configuration URL (https://HOST[:PORT]/.well-known/nq) nor an agent's HOST[:PORT]",
                t
            ));
        }
        // A bare IPv6 address takes brackets; HOST, HOST:PORT and [V6]:PORT stand as given.
        let host = if t.matches(':').count() > 1 && !t.starts_with('[') {
            format!("[{t}]")
        } else {
            t.to_string()
        };
        Ok(format!("https://{host}/.well-known/nq"))
    }

    pub fn spec(&self) -> Result<RpmSpec, Usage> {
        let url = self.config_url()?;
        let https = url.starts_with("https://");
        if !https && let Some(flag) = self.tls.first_given() {
            return Err(usage!("{flag} applies to an https:// server, and {url} is not one"));
        }
        let spec = RpmSpec {
            direction: self.direction,
            mad: self.mad,
            trim_percent: self.trim,
            sdt_percent: self.sdt,
            initial_connections: self.inp,
            add_connections: self.inc,
            max_connections: self.mnp,
            probes_per_second: self.mps,
            probe_capacity_percent: self.ptc,
            idle_probes: self.idle_probes,
            // Saturates: the spec's check names a timeout out of range.
            timeout_ms: (self.timeout.as_secs_f64() * 1e3).round().min(f64::from(u32::MAX)) as u32,
            tls: if https { self.tls.spec()? } else { Default::default() },
            timing: Timing {
                interval_seconds: self.interval.as_secs_f64(),
                ..Timing::new(Limit::Seconds(self.time.as_secs_f64()))
            },
            ..RpmSpec::new(&url)
        };
        spec.validate()?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    flag_tests!(Rpm, RpmArgs, RpmSpec, ["rpm"], |a: RpmArgs| a.spec());

    #[test]
    fn an_agent_is_its_https_ports_well_known_url_and_the_drafts_defaults_hold() {
        let s = spec(&["127.0.0.1:8443", "--insecure"]).expect("ok");
        assert_eq!(s.config_url, "https://127.0.0.1:8443/.well-known/nq");
        assert_eq!(
            (s.mad, s.trim_percent, s.sdt_percent, s.max_connections),
            (4, 95.0, 5.0, 16)
        );
        assert_eq!((s.timing.interval_seconds, s.timing.limit.seconds()), (5.0, Some(60.0)));
        assert_eq!(s.direction, RpmDirection::Both);
        assert!(s.tls.insecure);
        let s = spec(&["::1", "--insecure"]).expect("v6");
        assert_eq!(s.config_url, "https://[::1]/.well-known/nq");
        let s = spec(&[
            "https://h:1/nq.json",
            "--insecure",
            "--direction",
            "sequential",
            "-i",
            "1s",
            "--mps",
            "20",
        ])
        .expect("a URL");
        assert_eq!(
            (s.config_url.as_str(), s.direction),
            ("https://h:1/nq.json", RpmDirection::Sequential)
        );
        assert_eq!((s.timing.interval_seconds, s.probes_per_second), (1.0, 20));
    }

    #[test]
    fn bad_values_are_named() {
        let e = spec(&["h", "--insecure", "--mad", "0"]).expect_err("mad 0").to_string();
        assert!(e.contains("--mad"), "{e}");
        let e = spec(&["h", "--insecure", "--inp", "17"])
            .expect_err("inp > mnp")
            .to_string();
        assert!(e.contains("--inp 17"), "{e}");
        let e = parse(&["h", "--direction", "sideways"])
            .expect_err("a direction")
            .to_string();
        assert!(e.contains("sideways"), "{e}");
        let e = spec(&["http://h/", "--insecure"])
            .expect_err("tls without https")
            .to_string();
        assert!(e.contains("--insecure applies to an https:// server"), "{e}");
        let e = spec(&["ftp://h/x"]).expect_err("a scheme").to_string();
        assert!(e.contains("neither a configuration URL"), "{e}");
    }
}
