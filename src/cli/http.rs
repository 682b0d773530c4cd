//! `linerate http URL...`: simulated users (closed loop) or a request rate (open loop) against
//! any HTTP/1.1 or HTTP/2 server, Avalanche's method.

use super::common::{CpuArgs, ProbeArgs};
use super::timing::RampArgs;
use super::usage::{Usage, usage};
use anyhow::Context;
use linerate_core::client::HttpUrl;
use linerate_core::client::Target;
use linerate_core::spec::{HttpSpec, ProbeVia, TlsSpec};
use linerate_core::units::TimeSpan;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate http http://10.0.0.2/bytes/524288 --users 240 --ramp 10s -t 4m\n  linerate http http://10.0.0.2/index.html --users 16,32,64,128,240,480 --keepalive\n  linerate http http://10.0.0.2/bytes/1024 --rps 5000 --keepalive"
)]
pub struct HttpArgs {
    /// URLs to fetch (`http[s]://HOST[:PORT]/PATH`); each user takes them in turn
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,

    /// Simulated users, or a list to sweep (16,32,64): each waits for its whole response
    /// before its next request. Open loop (--rps): the most requests in flight
    #[arg(short = 'u', long, value_name = "N[,N...]", default_value = "64")]
    pub users: String,

    /// Sweep the user count by doubling from 8 until the throughput stops growing, and report
    /// the optimum
    #[arg(long, conflicts_with = "rps")]
    pub find_optimum: bool,

    /// A user's pause between a response and its next request (500ms, 1s)
    #[arg(long, value_name = "DURATION", default_value = "0")]
    pub think: TimeSpan,

    /// Keep connections open between requests (default: a new connection per request)
    ///
    /// Without it every request opens a new connection, and over https a new TLS handshake
    /// (resumed unless --tls-resume off).
    #[arg(short = 'k', long)]
    pub keepalive: bool,

    #[command(flatten)]
    pub tls: super::tls::TlsArgs,

    /// Speak HTTP/2: ALPN h2 on https URLs, h2c by prior knowledge on http ones
    ///
    /// Default: HTTP/1.1 (on https too, ALPN http/1.1). With it each user is one connection
    /// carrying up to --streams requests at once; keep-alive is implied.
    #[arg(long, help_heading = "HTTP/2")]
    pub http2: bool,

    /// HTTP/2: concurrent streams per connection, each a closed-loop sub-user (default 1)
    ///
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS caps it (the cap met is in the result).
    /// Example: --http2 --streams 10
    #[arg(long, value_name = "N", requires = "http2", help_heading = "HTTP/2")]
    pub streams: Option<u32>,

    #[command(flatten)]
    pub timing: RampArgs,

    /// Open loop: requests per second in all [default: closed loop, --users]
    #[arg(
        long = "rps",
        alias = "rate",
        value_name = "N",
        long_help = "Open loop: requests per second in all, each timed from its scheduled start;\n\
--users caps the requests in flight. Default: closed loop (simulated users).\n\
Example: --rps 5000"
    )]
    pub rps: Option<f64>,

    /// A request not answered in full within this time is a timeout (10s, 500ms)
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub timeout: TimeSpan,

    /// Fail the run (exit 4) past N failed requests, or P% of those that ended
    #[arg(
        long,
        value_name = "N|P%",
        long_help = "Fail the run (exit 4) when more than N requests failed, or more than P% of the\n\
requests that ended (2xx responses and failed ones; those in flight at the end\n\
are neither). A failed request is a response other than 2xx, or a connection\n\
refused, reset or timed out. Default: the run fails only when no request\n\
succeeded. Examples: --max-errors 0, --max-errors 1%"
    )]
    pub max_errors: Option<linerate_core::result::ErrorBudget>,

    /// Client worker threads (default: one per CPU)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: u16,

    #[command(flatten)]
    pub cpus: CpuArgs,

    /// Client workers' scheduling policy: batch or normal [default: batch]
    #[arg(
        long,
        value_name = "POLICY",
        default_value = "batch",
        hide_default_value = true,
        long_help = "The client workers' scheduling policy (sched(7)) [default: batch].\n\
batch (SCHED_BATCH) takes the same share of the CPU as normal, but a worker\n\
woken by a response does not preempt what runs on its CPU: a server on the\n\
same host finishes its batch of responses before the client reads them,\n\
instead of being interrupted at each one. On a client host with idle CPUs\n\
the two are the same. normal (SCHED_OTHER) is the kernel's default."
    )]
    pub sched: linerate_core::spec::Sched,

    /// A linerate agent on a server's host, to sample it; repeat for each server (default: try
    /// each URL's host)
    #[arg(long, value_name = "HOST[:PORT]", conflicts_with = "no_agent")]
    pub agent: Vec<String>,

    /// Do not look for an agent on the server's host
    #[arg(long)]
    pub no_agent: bool,

    /// First measure this client against linerate's own server on this host, and warn when the
    /// result comes within 10 % of it (the load generator may be the bottleneck)
    #[arg(long)]
    pub baseline: bool,

    /// `--probe http`: a small GET (`/bytes/SIZE`) on a connection of its own to the first
    /// URL's server; with --http2 also on the load's own connections.
    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub common: super::common::CommonArgs,
}

impl HttpArgs {
    /// The user counts asked for: one, a list, or None for --find-optimum.
    pub fn user_counts(&self) -> Result<Vec<u32>, Usage> {
        let counts: Vec<u32> = self
            .users
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .ok_or_else(|| usage!("--users '{v}' is not a count from 1 to 100000"))
            })
            .collect::<Result<_, Usage>>()?;
        if counts.len() > 1 && self.rps.is_some() {
            return Err(usage!(
                "--users takes one count with --rps (the most requests in flight)"
            ));
        }
        Ok(counts)
    }

    pub fn parsed_urls(&self) -> Result<Vec<HttpUrl>, Usage> {
        self.urls
            .iter()
            .map(|u| HttpUrl::parse(u).map_err(Usage::Flag))
            .collect()
    }

    /// The TLS asked for: Some when a URL is https (its files read and checked here, so that a
    /// bad --cacert is a usage error); TLS flags without an https URL are refused.
    pub fn tls(&self) -> Result<Option<TlsSpec>, Usage> {
        let https = self.urls.iter().any(|u| u.starts_with("https://"));
        if !https {
            if let Some(flag) = self.tls.first_given() {
                return Err(usage!("{flag} applies to https:// URLs, and none is given"));
            }
            return Ok(None);
        }
        if self.baseline {
            return Err(usage!(
                "--baseline measures linerate's cleartext server: not with https:// URLs"
            ));
        }
        Ok(Some(self.tls.spec()?))
    }

    pub fn spec_for(&self, users: u32) -> Result<HttpSpec, Usage> {
        let spec = HttpSpec {
            urls: self.urls.clone(),
            users,
            think_ms: self.think.as_secs_f64() * 1e3,
            keepalive: self.keepalive,
            timing: self.timing.timing(),
            rate: self.rps,
            // Saturates: the spec's check names a timeout out of range.
            timeout_ms: (self.timeout.as_secs_f64() * 1e3).round() as u32,
            threads: self.threads,
            cpus: self.cpus.list(),
            sched: self.sched,
            tls: self.tls()?,
            http2: self.http2.then(|| linerate_core::spec::Http2Spec {
                streams: self.streams.unwrap_or(1),
            }),
            probe: self.probe.spec("http", &[ProbeVia::Http], None)?,
        };
        spec.validate()?;
        Ok(spec)
    }

    /// The agents to ask for the servers' side: each --agent (required), else one on each URL's
    /// host (tried; the run goes on without one that does not answer).
    pub fn agents(&self, urls: &[HttpUrl]) -> anyhow::Result<Vec<linerate_core::client::HttpAgent>> {
        use linerate_core::client::HttpAgent;
        let port = linerate_core::client::DEFAULT_PORT;
        if self.no_agent {
            return Ok(Vec::new());
        }
        if !self.agent.is_empty() {
            return self
                .agent
                .iter()
                .map(|a| {
                    Ok(HttpAgent {
                        target: Target::resolve(a, port).with_context(|| format!("agent address '{a}'"))?,
                        required: true,
                    })
                })
                .collect();
        }
        let mut hosts: Vec<&str> = Vec::new();
        for u in urls {
            if !hosts.contains(&u.host.as_str()) {
                hosts.push(&u.host);
            }
        }
        Ok(hosts
            .into_iter()
            .filter_map(|host| {
                let text = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.to_string()
                };
                Target::resolve(&text, port).ok()
            })
            .map(|target| HttpAgent {
                target,
                required: false,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::spec::TlsVersion;

    flag_tests!(
        Http,
        HttpArgs,
        HttpSpec,
        ["http", "http://127.0.0.1/"],
        |a: HttpArgs| a.spec_for(1)
    );

    #[test]
    fn time_is_t_as_elsewhere_with_d_and_duration_kept() {
        assert_eq!(spec(&[]).expect("ok").timing.limit.seconds(), Some(10.0));
        assert_eq!(spec(&["-t", "30"]).expect("ok").timing.limit.seconds(), Some(30.0));
        assert_eq!(spec(&["--time=1500ms"]).expect("ok").timing.limit.seconds(), Some(1.5));
        assert_eq!(spec(&["-d", "4m"]).expect("alias").timing.limit.seconds(), Some(240.0));
        assert_eq!(
            spec(&["--duration=2s"]).expect("alias").timing.limit.seconds(),
            Some(2.0)
        );
        assert_eq!(
            spec(&["-d", "1", "-t", "3"])
                .expect("last one wins")
                .timing
                .limit
                .seconds(),
            Some(3.0)
        );
        let e = parse(&["-t", "soon"]).expect_err("not a time").to_string();
        assert!(e.contains("'soon' is not a time"), "{e}");
    }

    #[test]
    fn rps_is_requests_per_second_and_rate_its_old_spelling() {
        assert_eq!(spec(&[]).expect("ok").rate, None, "closed loop by default");
        assert_eq!(spec(&["--rps", "5000"]).expect("ok").rate, Some(5000.0));
        assert_eq!(spec(&["--rps=10"]).expect("ok").rate, Some(10.0));
        assert_eq!(spec(&["--rate", "7"]).expect("alias").rate, Some(7.0));
        let e = parse(&["--rps", "many"]).expect_err("not a number").to_string();
        assert!(e.contains("invalid value 'many' for '--rps <N>'"), "{e}");
        let e = parse(&["--rps", "1", "--users", "1,2"])
            .expect("parses")
            .user_counts()
            .expect_err("a list with --rps")
            .to_string();
        assert!(e.contains("--users takes one count with --rps"), "{e}");
        assert!(parse(&["--rate", "1", "--find-optimum"]).is_err());
    }

    #[test]
    fn issue_23_max_errors_is_a_count_or_a_share() {
        use linerate_core::result::ErrorBudget;
        assert_eq!(parse(&[]).expect("ok").max_errors, None, "the default rule");
        assert_eq!(
            parse(&["--max-errors", "0"]).expect("ok").max_errors,
            Some(ErrorBudget::Count(0))
        );
        assert_eq!(
            parse(&["--max-errors=12"]).expect("ok").max_errors,
            Some(ErrorBudget::Count(12))
        );
        assert_eq!(
            parse(&["--max-errors", "2.5%"]).expect("ok").max_errors,
            Some(ErrorBudget::Percent(2.5))
        );
        assert_eq!(
            parse(&["--max-errors", "1", "--max-errors", "100%"])
                .expect("last one wins")
                .max_errors,
            Some(ErrorBudget::Percent(100.0))
        );
        for bad in ["-1", "101%", "some", "%", "1.5"] {
            let e = parse(&[&format!("--max-errors={bad}")]).expect_err(bad).to_string();
            assert!(e.contains("--max-errors"), "{bad}: {e}");
        }
    }

    #[test]
    fn issue_27_tls_flags_go_into_the_spec_with_https_urls_only() {
        assert_eq!(spec(&[]).expect("ok").tls, None, "cleartext: no TLS in the spec");
        let https = |more: &[&str]| spec(&[&["https://127.0.0.1/"][..], more].concat());
        let t = https(&["--insecure"]).expect("ok").tls.expect("https");
        assert_eq!((t.insecure, t.resume, t.version, t.cacert), (true, true, None, None));
        let t = https(&["-k", "--insecure", "--tls-version=1.3"])
            .expect("ok")
            .tls
            .expect("https");
        assert_eq!(t.version, Some(TlsVersion::V1_3));
        let t = https(&[
            "--insecure",
            "--tls-version",
            "1.2",
            "--tls-resume",
            "on",
            "--tls-resume=off",
        ])
        .expect("last one wins")
        .tls
        .expect("https");
        assert_eq!((t.version, t.resume), (Some(TlsVersion::V1_2), false));
        let e = https(&["--tls-version", "1.1"]).expect_err("no 1.1").to_string();
        assert!(e.contains("'1.1' is not a TLS version"), "{e}");
        let e = https(&["--tls-resume", "maybe"]).expect_err("on or off").to_string();
        assert!(e.contains("neither on nor off"), "{e}");
        assert!(https(&["--insecure", "--cacert", "/x"]).is_err(), "conflicting");
        let e = https(&["--cacert", "/nonexistent/ca.pem"])
            .expect_err("unreadable")
            .to_string();
        assert!(
            e.contains("cannot read the CA certificates in /nonexistent/ca.pem"),
            "{e}"
        );
        let e = spec(&["--tls-resume", "off"]).expect_err("no https URL").to_string();
        assert!(e.contains("--tls-resume applies to https:// URLs"), "{e}");
    }

    #[test]
    fn timeout_and_cooldown_are_durations() {
        assert_eq!(spec(&[]).expect("ok").timeout_ms, 10_000);
        assert_eq!(
            spec(&["--timeout=2"]).expect("ok").timeout_ms,
            2000,
            "a bare number is seconds"
        );
        assert_eq!(spec(&["--timeout", "250ms"]).expect("ok").timeout_ms, 250);
        assert_eq!(spec(&[]).expect("ok").timing.cooldown_seconds, 0.0);
        assert_eq!(
            spec(&["-t", "4", "--cooldown", "1s"])
                .expect("ok")
                .timing
                .cooldown_seconds,
            1.0
        );
        assert_eq!(spec(&["--cooldown=500ms"]).expect("ok").timing.cooldown_seconds, 0.5);
        let e = spec(&["-t", "1", "--cooldown", "1"])
            .expect_err("no window")
            .to_string();
        assert!(e.contains("leave nothing of a 1 s test"), "{e}");
        let e = parse(&["--cooldown", "later"]).expect_err("not a time").to_string();
        assert!(e.contains("'later' is not a time"), "{e}");
    }
}
