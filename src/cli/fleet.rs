//! The flags that take a test off this host: `--from A` runs it from agent A (a
//! third-party test), `--pattern` over many agents (mesh, disjoint, incast, outcast, pairs).
//! Part of [`super::common::HostArgs`], so tcp, udp and rr take them alike.

use linerate_core::result::Pattern;
use linerate_core::units::TimeSpan;

#[derive(Debug, Clone, clap::Args)]
pub struct FleetArgs {
    /// Run from this agent (a third-party test; it acts as the client); with --pattern the senders
    #[arg(
        long,
        value_name = "HOST[,HOST...]",
        value_delimiter = ',',
        long_help = "Run the test from this agent rather than from here: it acts as the client's half\nand sends its result back (a third-party test; both agents need the fleet's secret).\nWith --pattern disjoint, incast or outcast: the senders. A name may be dns:NAME\n(every address it resolves to) or @FILE (one host per line)."
    )]
    pub from: Vec<String>,

    /// Test a fleet: mesh (the HOSTs, every ordered pair), disjoint (--from x HOSTs), incast, outcast, pairs
    #[arg(
        long,
        value_name = "PATTERN",
        long_help = "Test a fleet of agents and write one matrix:\n  mesh      every ordered pair of the HOSTs, in rounds (no host in two tests at once)\n  disjoint  every --from against every HOST, in rounds\n  incast    every --from into the one HOST, all at once\n  outcast   the one --from to every HOST, all at once\n  pairs     the --pair FROM,TO given, in rounds\nTests that run together start at one instant agreed through each agent's estimated clock."
    )]
    pub pattern: Option<Pattern>,

    /// With --pattern pairs: one pair, its sender first (repeatable)
    #[arg(long = "pair", value_name = "FROM,TO")]
    pub pairs: Vec<String>,

    /// Leave out pairs whose two agents say they run on one node (serve --node-name)
    #[arg(long)]
    pub different_nodes: bool,

    /// Warn when tests that run together start further apart than this, or a clock estimate is less sure
    #[arg(long, value_name = "TIME", default_value = "10ms")]
    pub skew_bound: TimeSpan,
}
