//! `linerate http URL...`: simulated users (closed loop) or a request rate (open loop) against
//! any HTTP/1.1 server, Avalanche's method.

use super::common::{CpuArgs, IntervalArgs, OutputArgs};
use anyhow::{Context, bail};
use linerate_core::client::HttpUrl;
use linerate_core::client::Target;
use linerate_core::spec::HttpSpec;
use linerate_core::units::TimeSpan;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate http http://10.0.0.2/bytes/524288 --users 240 --ramp 10s -t 4m\n  linerate http http://10.0.0.2/index.html --users 16,32,64,128,240,480 --keepalive\n  linerate http http://10.0.0.2/bytes/1024 --rps 5000 --keepalive"
)]
pub struct HttpArgs {
    /// URLs to fetch (`http://HOST[:PORT]/PATH`); each user takes them in turn
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
    #[arg(short = 'k', long)]
    pub keepalive: bool,

    /// Users start evenly over this time; the figures leave it out (10s)
    #[arg(long, value_name = "DURATION", default_value = "0")]
    pub ramp: TimeSpan,

    /// Full load after the ramp: the test length (30s, 4m; also -d/--duration)
    #[arg(
        short = 't',
        long = "time",
        visible_short_alias = 'd',
        visible_alias = "duration",
        value_name = "DURATION",
        default_value = "10s",
        long_help = super::common::TIME_HELP
    )]
    pub time: TimeSpan,

    #[command(flatten)]
    pub cooldown: super::common::CooldownArgs,

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

    /// Client worker threads (default: one per CPU)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: u16,

    #[command(flatten)]
    pub cpus: CpuArgs,

    #[command(flatten)]
    pub interval: IntervalArgs,

    /// A linerate agent on the server's host, to sample it (default: try the first URL's host)
    #[arg(long, value_name = "HOST[:PORT]", conflicts_with = "no_agent")]
    pub agent: Option<String>,

    /// Do not look for an agent on the server's host
    #[arg(long)]
    pub no_agent: bool,

    /// First measure this client against linerate's own server on this host, and warn when the
    /// result comes within 10 % of it (the load generator may be the bottleneck)
    #[arg(long)]
    pub baseline: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub reach: super::ConnectArgs,
}

impl HttpArgs {
    /// The user counts asked for: one, a list, or None for --find-optimum.
    pub fn user_counts(&self) -> anyhow::Result<Vec<u32>> {
        let counts: Vec<u32> = self
            .users
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=100_000).contains(n))
                    .with_context(|| format!("--users '{v}' is not a count from 1 to 100000"))
            })
            .collect::<anyhow::Result<_>>()?;
        if counts.len() > 1 && self.rps.is_some() {
            bail!("--users takes one count with --rps (the most requests in flight)");
        }
        Ok(counts)
    }

    pub fn parsed_urls(&self) -> anyhow::Result<Vec<HttpUrl>> {
        self.urls
            .iter()
            .map(|u| HttpUrl::parse(u).map_err(anyhow::Error::msg))
            .collect()
    }

    pub fn spec_for(&self, users: u32) -> anyhow::Result<HttpSpec> {
        let spec = HttpSpec {
            urls: self.urls.clone(),
            users,
            think_ms: self.think.as_secs_f64() * 1e3,
            keepalive: self.keepalive,
            ramp_seconds: self.ramp.as_secs_f64(),
            duration_seconds: self.time.as_secs_f64(),
            cooldown_seconds: self.cooldown.seconds(),
            rate: self.rps,
            // Saturates: the spec's check names a timeout out of range.
            timeout_ms: (self.timeout.as_secs_f64() * 1e3).round() as u32,
            threads: self.threads,
            cpus: self.cpus.list(),
            interval_seconds: self.interval.interval.as_secs_f64(),
        };
        spec.validate()?;
        Ok(spec)
    }

    /// The agent to ask for the server side: --agent, else the first URL's host (not required).
    pub fn agent(&self, urls: &[HttpUrl]) -> anyhow::Result<Option<linerate_core::client::HttpAgent>> {
        if self.no_agent {
            return Ok(None);
        }
        let port = linerate_core::client::DEFAULT_PORT;
        match &self.agent {
            Some(a) => Ok(Some(linerate_core::client::HttpAgent {
                target: Target::resolve(a, port).with_context(|| format!("agent address '{a}'"))?,
                required: true,
            })),
            None => {
                let host = &urls[0].host;
                let text = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                Ok(Target::resolve(&text, port)
                    .ok()
                    .map(|target| linerate_core::client::HttpAgent {
                        target,
                        required: false,
                    }))
            }
        }
    }
}
