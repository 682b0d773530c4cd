//! `linerate sys`, `linerate doctor` and `linerate calc`: the host's samplers and configuration
//! without a test, tuning advice, and the wire's arithmetic.

use super::usage::{Usage, usage};
use linerate_core::units::{BitRate, TimeSpan};

#[derive(Debug, clap::Args)]
pub struct SysArgs {
    /// Seconds between lines
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", default_value = "1")]
    pub interval: TimeSpan,

    /// Stop after this many lines (default: until Ctrl-C)
    #[arg(short = 'n', long = "count", value_name = "N")]
    pub count: Option<u64>,

    /// Show only these interfaces, idle or not (default: those that moved anything)
    #[arg(long = "iface", value_name = "IF")]
    pub interfaces: Vec<String>,

    /// Print the host's configuration instead of the samplers
    #[arg(long)]
    pub config: bool,

    /// JSON: one document per line (or the configuration as one document)
    #[arg(long)]
    pub json: bool,
}

impl SysArgs {
    pub fn interval(&self) -> Result<std::time::Duration, Usage> {
        let seconds = self.interval.as_secs_f64();
        if !(0.01..=3600.0).contains(&seconds) {
            return Err(usage!("--interval {seconds} is not between 0.01 and 3600 seconds"));
        }
        Ok(self.interval.0)
    }

    /// Refuses an `--iface` that names no interface of this network namespace (it would only
    /// ever show zeros).
    pub fn check_interfaces(&self) -> Result<(), Usage> {
        if self.interfaces.is_empty() {
            return Ok(());
        }
        let here: Vec<String> = linerate_core::metrics::netdev::read()
            .into_iter()
            .map(|i| i.name)
            .collect();
        if let Some(missing) = self.interfaces.iter().find(|n| !here.contains(n)) {
            return Err(usage!(
                "--iface {missing}: no such interface in this network namespace (there are: {})",
                here.join(", ")
            ));
        }
        Ok(())
    }
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Round-trip time of the path to tune for (10ms, 175ms; a bare number is seconds): buffers
    /// are checked against the bandwidth-delay product
    #[arg(long, value_name = "TIME")]
    pub rtt: Option<TimeSpan>,

    /// Rate of the path (10G); default: the interface's link speed
    #[arg(long, value_name = "RATE", value_parser = super::common::positive_rate)]
    pub rate: Option<BitRate>,

    /// Interfaces to check (default: every interface with a link speed, and lo)
    #[arg(long = "iface", value_name = "IF")]
    pub interfaces: Vec<String>,

    /// Print the findings as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct CalcArgs {
    #[command(subcommand)]
    pub command: CalcCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CalcCommand {
    /// The most TCP and UDP payload a link carries (Ethernet, IP and TCP/UDP headers counted)
    Goodput {
        /// Link speed (10G, 25gbit, 100M)
        #[arg(long = "link", value_name = "RATE", value_parser = super::common::positive_rate)]
        link: BitRate,
        /// MTU, bytes (68 to 65535)
        #[arg(long, value_name = "BYTES", default_value_t = 1500,
              value_parser = clap::value_parser!(u32).range(68..=65_535))]
        mtu: u32,
        /// IPv6 headers (40 bytes) instead of IPv4 (20)
        #[arg(long)]
        ipv6: bool,
        /// What the link counts per packet: ethernet, tbf or both
        ///
        /// ethernet: a physical link, on the wire (preamble 8, header 14, FCS 4, inter-frame gap
        /// 12); tbf: a link shaped by Linux's tbf, as `lab up --link rate=` makes (header 14, no
        /// preamble, FCS or gap). Default: ethernet. Example: --link-kind both
        #[arg(long = "link-kind", value_name = "KIND", value_enum, default_value_t = CalcLinkKind::Ethernet)]
        link_kind: CalcLinkKind,
        #[arg(long)]
        json: bool,
    },
}

/// `calc goodput --link-kind`: one kind of link, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CalcLinkKind {
    Ethernet,
    Tbf,
    Both,
}
