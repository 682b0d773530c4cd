//! `linerate quick`: a short TCP test against an agent this process starts on loopback, run
//! through the same driver as `linerate tcp` and stored with the label `quick=yes`.

use crate::cli::common::Route;
use crate::cli::quick::QuickArgs;
use crate::drive::routed::Routed;
use crate::drive::tcp::Tcp;
use crate::drive::{Mode, TestCommand, drive};
use linerate_core::agent::{Agent, AgentConfig};
use linerate_core::client::{ClientOptions, Target};
use linerate_core::spec::{Limit, TcpSpec, Validate};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

/// `linerate quick`.
pub fn quick(args: &QuickArgs) -> anyhow::Result<ExitCode> {
    let agent = Agent::bind(AgentConfig {
        max_connections: 64,
        ..AgentConfig::new(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
    })?;
    let addr = agent.local_addr();
    std::thread::spawn(move || agent.serve(crate::serve::print_agent_event));
    let mut spec = TcpSpec::new();
    spec.timing.limit = Limit::Seconds(args.time.as_secs_f64());
    spec.streams = args.streams;
    spec.validate()?;
    if !args.output.json && !args.output.brief {
        println!(
            "linerate quick: {} of TCP over loopback to an agent started on {addr}",
            args.time
        );
    }
    let route = Route::Agents {
        targets: vec![Target {
            name: addr.to_string(),
            addr,
        }],
        from: None,
    };
    drive(TestCommand {
        // Told apart from a `tcp` run in `linerate results --label quick=yes`.
        labels: vec![("quick".to_string(), "yes".to_string())],
        lab: false,
        ..TestCommand::new(
            Routed {
                route,
                opts: ClientOptions::default(),
                kind: Tcp,
            },
            spec,
            Mode::Once,
            args.output.clone(),
        )
    })
}
