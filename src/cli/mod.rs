//! The command line: clap derive, one file per subcommand. Each subcommand's arguments turn
//! into a validated spec (`into_spec`) before anything touches the network.

/// A kind's flag tests: `parse(ARGS)` reads `linerate HEAD... ARGS...` as that kind's flags, and
/// `spec(ARGS)` turns them into its spec with `into`.
#[cfg(test)]
macro_rules! flag_tests {
    ($variant:ident, $args:ty, $spec:ty, [$($head:literal),+], $into:expr) => {
        #[allow(dead_code)]
        fn parse(args: &[&str]) -> Result<$args, clap::Error> {
            let full = [&["linerate", $($head),+][..], args].concat();
            match <crate::cli::Cli as clap::Parser>::try_parse_from(full)?.command {
                crate::cli::Command::$variant(a) => Ok(a),
                other => panic!("parsed as {other:?}"),
            }
        }

        fn spec(args: &[&str]) -> anyhow::Result<$spec> {
            Ok($into(parse(args)?)?)
        }
    };
}

pub mod common;
pub mod compare;
pub mod complete;
pub mod fleet;
pub mod http;
pub mod iperf3;
pub mod lab;
pub mod plan;
pub mod quick;
pub mod report;
pub mod results;
pub mod rpm;
pub mod rr;
pub mod rrul;
pub mod secret;
pub mod serve;
pub mod sys;
pub mod tcp;
pub mod timing;
pub mod tls;
pub mod udp;
pub mod usage;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "linerate",
    version,
    args_override_self = true,
    arg_required_else_help = true,
    about = "Network performance tests: what a host and its network can do, and what it costs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an agent: the far end of tests
    Serve(serve::ServeArgs),
    /// TCP throughput against one or more agents (NTttcp-style)
    Tcp(tcp::TcpArgs),
    /// Paced UDP streams: loss, order, arrival spacing, one-way delay (UDPmon-style)
    Udp(udp::UdpArgs),
    /// Request-response round trips: latency percentiles, histogram, size sweeps (netperf TCP_RR/UDP_RR/TCP_CRR, UDPmon)
    Rr(rr::RrArgs),
    /// Realtime Response Under Load (flent's RRUL): TCP streams in four DSCP classes each way, probes per class, phase by phase
    Rrul(rrul::RrulArgs),
    /// HTTP load: simulated users or a request rate against any HTTP/1.1 or HTTP/2 server (Avalanche-style)
    Http(http::HttpArgs),
    /// Responsiveness under working conditions: RPM, the IETF draft's test against a server that follows it
    Rpm(rpm::RpmArgs),
    /// Compare two sets of results: each figure's change, its 95 % interval and a verdict
    Compare(compare::CompareArgs),
    /// Campaigns: a plan of tests, varied options and variants, checked and run
    Plan(plan::PlanArgs),
    /// A short TCP test against an agent started on loopback, to see linerate work
    Quick(quick::QuickArgs),
    /// Stored results: list, show again, export, label, remove (every test is stored)
    Results(results::ResultsArgs),
    /// Plots and a self-contained HTML page from result documents (--json files)
    Report(report::ReportArgs),
    /// Emulated hosts and links on this machine (network namespaces; needs root)
    Lab(lab::LabArgs),
    /// A fleet's shared secret: `secret new` prints a fresh one, or a Kubernetes Secret holding it
    Secret(secret::SecretArgs),
    /// This host's samplers live (CPU, interrupts, interfaces, stack), or its configuration
    Sys(sys::SysArgs),
    /// Check this host against known tuning advice; prints each finding with its fix, changes nothing
    Doctor(sys::DoctorArgs),
    /// Arithmetic of the wire: `calc goodput --link 10G --mtu 9000`
    Calc(sys::CalcArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(complete::CompletionsArgs),
    /// Print the man page (roff), or write a page per subcommand into a directory
    Man(complete::ManArgs),
}

/// The command line as clap reads it: the derive's command, with every flag that takes a value
/// taking a negative number as that value (`-i -1`), so that the value's parser refuses it by
/// name. Without this clap reads `-1` as a flag and suggests `-- -1`, which would make it a host.
pub fn command() -> clap::Command {
    fn numbers_are_values(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            if !a.is_positional() && a.get_action().takes_values() {
                a.allow_negative_numbers(true)
            } else {
                a
            }
        })
        .mut_subcommands(numbers_are_values)
    }
    numbers_are_values(Cli::command())
}

/// Parses this process's arguments with [`command`].
pub fn parse() -> Result<Cli, clap::Error> {
    let mut matches = command().try_get_matches()?;
    Cli::from_arg_matches_mut(&mut matches)
}

/// Agent addresses as given (HOST, HOST:PORT, `[V6]:PORT`), `port` where none is given.
pub fn resolve_targets(hosts: &[String], port: u16) -> anyhow::Result<Vec<linerate_core::client::Target>> {
    use anyhow::Context;
    hosts
        .iter()
        .map(|h| linerate_core::client::Target::resolve(h, port).with_context(|| format!("agent address '{h}'")))
        .collect()
}

/// How a test command reaches its agents: `--connect-timeout` and the secret.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// Seconds to wait for an agent to answer a connection
    #[arg(long, value_name = "SECONDS", default_value = "5", allow_hyphen_values = true,
          value_parser = common::positive_time)]
    pub connect_timeout: linerate_core::units::TimeSpan,

    /// Local address to connect from (as iperf3's -B), e.g. 127.0.0.2 or 10.0.0.1
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,

    /// Run the test under the agents' profile NAME (one their owner named with serve --profile)
    ///
    /// Each agent runs the profile's command before the test and its undo after, and the result
    /// records both; an agent without that profile refuses the test. Example: --profile toe-off
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    #[command(flatten)]
    pub secret: SecretArgs,

    /// With a secret, still run against an agent that asks for none
    ///
    /// A client that has a secret requires the agent to prove it knows it too; an agent that
    /// asks for no secret proves nothing and is refused unless this is given.
    #[arg(long)]
    pub allow_unauthenticated_agent: bool,
}

impl ConnectArgs {
    pub fn options(&self) -> anyhow::Result<linerate_core::client::ClientOptions> {
        Ok(linerate_core::client::ClientOptions {
            secret: self.secret.load()?,
            // Above 0: its parser refuses 0 (`common::positive_time`).
            connect_timeout: self.connect_timeout.0,
            bind: self.bind,
            allow_unauthenticated_agent: self.allow_unauthenticated_agent,
            profile: self.profile.clone(),
            lab: None,
            start_at: None,
        })
    }
}

/// The fewest bytes a shared secret may have (after trailing whitespace is cut): 16, a
/// 128-bit key if random; `linerate secret new` makes 32 (docs/security.md).
pub const MIN_SECRET_BYTES: usize = 16;

/// How a client or agent gets the shared secret: `--secret-file`, else `LINERATE_SECRET`.
#[derive(Debug, Clone, clap::Args)]
pub struct SecretArgs {
    /// File holding the shared secret (else the LINERATE_SECRET environment variable)
    #[arg(long, value_name = "PATH")]
    pub secret_file: Option<PathBuf>,
}

impl SecretArgs {
    pub fn load(&self) -> anyhow::Result<Option<linerate_core::client::Secret>> {
        let raw = match &self.secret_file {
            Some(path) => Some(
                std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read secret file {}: {e}", path.display()))?,
            ),
            None => std::env::var_os("LINERATE_SECRET").map(|v| v.into_encoded_bytes()),
        };
        let Some(mut secret) = raw else { return Ok(None) };
        while secret.last().is_some_and(|b| b.is_ascii_whitespace()) {
            secret.pop();
        }
        // From here on a refused secret is zeroed too, when it is dropped.
        let secret = linerate_core::client::Secret::from(secret);
        anyhow::ensure!(!secret.is_empty(), "the shared secret is empty");
        // A secret of a byte or two is guessed offline from one challenge and its
        // proof; refuse what is short, as a usage error naming the bound and the fix.
        if secret.len() < MIN_SECRET_BYTES {
            return Err(usage::usage!(
                "the shared secret is {} bytes: at least {MIN_SECRET_BYTES} are needed (`linerate secret new` makes a random one)",
                secret.len()
            )
            .into());
        }
        Ok(Some(secret))
    }
}
