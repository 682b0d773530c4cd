//! `linerate lab`: up, status, exec, down (and the hidden relay the lab starts).

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Args)]
pub struct NameArg {
    /// The lab's name; its hosts are network namespaces NAME-h1 .. NAME-hN
    #[arg(long, value_name = "LAB", default_value = linerate_lab::DEFAULT_NAME)]
    pub name: String,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create hosts and links, and start an agent in each host
    #[command(
        after_help = "Link properties: rate=1gbit delay=10ms jitter=1ms loss=0.5% reorder=1% duplicate=0.1%\n  mtu=9000 limit=1000 (packets) buffer=200ms|300p aqm=fq_codel|cake (the rate's queue: a FIFO\n  of that depth, or that AQM where the kernel has it). rate limits what a host sends and what it\n  receives; the rest acts on what it sends, so delay=10ms is 10 ms each way (20 ms round trip). Times\n  take a unit (10ms, 250us); a bare number is seconds. hX:SPEC merges over earlier --links.\n  Examples:\n  linerate lab up --hosts 2 --link rate=100mbit,delay=10ms\n  linerate lab up --hosts 3 --link rate=1gbit --link h2:delay=50ms,loss=1%\n  linerate lab up --hosts 6 --link rate=100mbit --link h5:rate=50mbit   (incast into h5: 50)\n  linerate lab up --link rate=100mbit,delay=10ms,buffer=200ms   (bufferbloat: 200 ms under load)"
    )]
    Up {
        #[command(flatten)]
        name: NameArg,
        /// Hosts (h1 .. hN); 2 are joined point to point, more through a bridge
        #[arg(long, value_name = "N", default_value_t = 2)]
        hosts: usize,
        /// Link properties: SPEC for every host, hX:SPEC for one, h1-h2:SPEC for a pair (2 hosts)
        #[arg(long = "link", value_name = "[SCOPE:]SPEC")]
        links: Vec<String>,
        /// Use linerate's own emulation even where the kernel has netem
        #[arg(long)]
        no_netem: bool,
        /// A profile for every host's agent (serve --profile NAME=COMMAND; repeatable), e.g.
        /// --profile offload-off='ethtool -K eth0 tso off gso off gro off'
        #[arg(long = "profile", value_name = "NAME=COMMAND")]
        profiles: Vec<String>,
        /// Print the lab's status as JSON
        #[arg(long)]
        json: bool,
    },
    /// Hosts, addresses, links, what emulates them, and the agents
    Status {
        #[command(flatten)]
        name: NameArg,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a host, with the lab's agent secret in its environment
    Exec {
        #[command(flatten)]
        name: NameArg,
        /// h1 .. hN
        #[arg(value_name = "HOST")]
        host: String,
        /// The command and its arguments, after --
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Remove everything the lab made (also the left-overs of a crashed one)
    Down {
        #[command(flatten)]
        name: NameArg,
    },
    /// The link emulator a lab starts in its switch namespace (not for direct use)
    #[command(hide = true)]
    Relay {
        #[arg(long, value_name = "PATH")]
        config: PathBuf,
    },
}
