//! `linerate serve`: where the agent listens and whom it lets in.

use super::SecretArgs;
use std::net::{IpAddr, Ipv6Addr};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (IPv4 or IPv6); :: listens on both
    #[arg(short = 'B', long, value_name = "ADDR", default_value_t = IpAddr::V6(Ipv6Addr::UNSPECIFIED))]
    pub bind: IpAddr,

    /// Port for control and data connections (0 = any free port, printed at start)
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::proto::DEFAULT_PORT)]
    pub port: u16,

    /// Serve without a secret on a non-loopback address (anyone who reaches it can run tests)
    #[arg(long)]
    pub no_auth: bool,

    /// Tests run at once; past this a client is told the agent is busy
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_tests: u16,

    /// Take part in multicast UDP tests to this group (repeatable); others are refused
    #[arg(long = "join", value_name = "GROUP")]
    pub joins: Vec<IpAddr>,

    #[command(flatten)]
    pub secret: SecretArgs,
}
