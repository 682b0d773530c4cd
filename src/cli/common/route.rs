//! Where a test goes, decided once from the host flags: linerate agents (from here, or from one
//! agent with `--from`), an iperf3 server (`iperf3://HOST[:PORT]`), or a pattern over a fleet
//! of agents (`--pattern`). Each test command makes its [`Route`] here, before its spec, and
//! hands both to the one driver (`crate::drive`), which runs the test along it.

use super::{CpuArgs, HostArgs};
use crate::cli::ConnectArgs;
use crate::cli::usage::{Usage, usage};
use linerate_core::client::{ClientOptions, IPERF3_SCHEME, Target, iperf3_target};
use linerate_core::fleet::{Layout, Selection};
use linerate_core::result::Pattern;
use std::time::Duration;

/// Where a test goes.
pub enum Route {
    /// linerate agents: from here against every one at once, or with `from` a third-party
    /// test from that agent against the one target.
    Agents { targets: Vec<Target>, from: Option<Target> },
    /// An iperf3 server; the client's half runs here.
    Iperf3(Target),
    /// A pattern over a fleet of agents, every cell a third-party test: one matrix.
    Fleet(Fleet),
}

/// A pattern laid out over its agents, named as given: the driver resolves them once the run
/// is known to be a single one (a pattern is neither repeated nor swept).
pub struct Fleet {
    pub pattern: Pattern,
    pub layout: Layout,
    /// The port of hosts named without one.
    pub port: u16,
    /// `--different-nodes`: leave out the pairs on one node, as the agents' clocks say.
    pub different_nodes: bool,
    /// `--skew-bound`.
    pub skew_bound: Duration,
}

/// Whether a kind can run against an iperf3 server (tcp and udp can).
#[derive(Clone, Copy, PartialEq)]
pub enum Iperf3 {
    Takes,
    Refuses,
}

impl Route {
    /// The agents (HOST:PORT) or the server as given, as the store keeps them.
    pub fn names(&self) -> Vec<String> {
        match self {
            Route::Agents { targets, .. } => targets.iter().map(|t| t.name.clone()).collect(),
            Route::Iperf3(server) => vec![server.name.clone()],
            Route::Fleet(fleet) => fleet.layout.hosts.clone(),
        }
    }

    /// The linerate agents a test from here runs against (none for the other routes).
    pub fn agents(&self) -> &[Target] {
        match self {
            Route::Agents { targets, .. } => targets,
            _ => &[],
        }
    }
}

impl HostArgs {
    /// Where the test goes and the options to reach it. Checked here, before any connection:
    /// the flags that only one route takes, `--cpus` against this host when the client's half
    /// runs here, and a pattern's shared secret.
    pub fn route(&self, iperf3: Iperf3, cpus: &CpuArgs, reach: &ConnectArgs) -> anyhow::Result<(Route, ClientOptions)> {
        if iperf3 == Iperf3::Takes
            && let Some(server) = self.iperf3_server()?
        {
            cpus.check_here()?;
            return Ok((Route::Iperf3(server), reach.options()?));
        }
        if let Some(pattern) = self.fleet.pattern {
            return self.fleet_route(pattern, reach);
        }
        // The iperf3 server of a kind that cannot speak to one.
        if self.hosts.iter().any(|h| h.starts_with(IPERF3_SCHEME)) {
            return Err(usage!(
                "an {IPERF3_SCHEME} target takes `linerate tcp` or `linerate udp` only: this kind runs against linerate agents"
            )
            .into());
        }
        let fleet = &self.fleet;
        if !fleet.pairs.is_empty() {
            return Err(usage!("--pair names a pattern's pairs: give --pattern pairs").into());
        }
        if fleet.different_nodes {
            return Err(usage!("--different-nodes filters a pattern's pairs: give --pattern").into());
        }
        // `--from` names agents as the targets do (`dns:NAME`, `@FILE` expanded): without a
        // pattern, one test from one agent against one agent.
        let targets = self.targets()?;
        let from = if fleet.from.is_empty() {
            None
        } else {
            let from =
                linerate_core::fleet::expand_all(&fleet.from, self.port).map_err(|e| Usage::Flag(e.to_string()))?;
            match (from.as_slice(), targets.len()) {
                ([one], 1) => Some(crate::cli::resolve_targets(std::slice::from_ref(one), self.port)?.remove(0)),
                _ => {
                    return Err(usage!(
                        "--from without --pattern runs one test from one agent against one agent; for more give --pattern"
                    )
                    .into());
                }
            }
        };
        if from.is_none() {
            cpus.check_here()?;
        }
        Ok((Route::Agents { targets, from }, reach.options()?))
    }

    /// The iperf3 server the hosts name, if one does: then it is the only target, with none of
    /// the flags that take a test off this host.
    pub fn iperf3_server(&self) -> anyhow::Result<Option<Target>> {
        if !self.hosts.iter().any(|h| h.starts_with(IPERF3_SCHEME)) {
            return Ok(None);
        }
        if self.hosts.len() != 1 {
            return Err(usage!(
                "an {IPERF3_SCHEME} target runs alone: give it as the only HOST, not with {} other{}",
                self.hosts.len() - 1,
                if self.hosts.len() == 2 { "" } else { "s" }
            )
            .into());
        }
        let fleet = &self.fleet;
        let off_host = [
            ("--from", !fleet.from.is_empty()),
            ("--pattern", fleet.pattern.is_some()),
            ("--pair", !fleet.pairs.is_empty()),
            ("--different-nodes", fleet.different_nodes),
        ];
        if let Some((flag, _)) = off_host.iter().find(|(_, given)| *given) {
            return Err(usage!("{flag} runs between linerate agents; an {IPERF3_SCHEME} target cannot take it").into());
        }
        let text = &self.hosts[0];
        match iperf3_target(text) {
            Some(Ok(t)) => Ok(Some(t)),
            Some(Err(e)) => Err(usage!("iperf3 server '{text}': {e}").into()),
            None => Ok(None),
        }
    }

    /// `--pattern`: the selection laid out; its tests are third-party tests among agents that
    /// prove themselves with the fleet's secret.
    fn fleet_route(&self, pattern: Pattern, reach: &ConnectArgs) -> anyhow::Result<(Route, ClientOptions)> {
        let fleet = &self.fleet;
        let selection = Selection::expand(pattern, &self.hosts, &fleet.from, &fleet.pairs, self.port)
            .map_err(|e| Usage::Flag(e.to_string()))?;
        let layout = selection.layout().map_err(|e| Usage::Flag(e.to_string()))?;
        let opts = reach.options()?;
        if opts.secret.is_none() {
            return Err(usage!(
                "a pattern's tests are third-party tests among agents that share a secret: give --secret-file PATH or set LINERATE_SECRET"
            )
            .into());
        }
        let route = Route::Fleet(Fleet {
            pattern,
            layout,
            port: self.port,
            different_nodes: fleet.different_nodes,
            skew_bound: fleet.skew_bound.0,
        });
        Ok((route, opts))
    }
}

#[cfg(test)]
mod tests {
    use super::{Iperf3, Route};
    use crate::cli::{Cli, Command};
    use clap::Parser;
    use linerate_core::client::DEFAULT_PORT;

    /// The route `linerate ARGS` makes from its host flags (no connection: the hosts are
    /// addresses, the secret a file).
    fn route(args: &[&str]) -> anyhow::Result<Route> {
        let full = [&["linerate"][..], args].concat();
        let made = match Cli::try_parse_from(full).expect("parses").command {
            Command::Tcp(a) => a.hosts.route(Iperf3::Takes, &a.streams.cpus, &a.reach),
            Command::Udp(a) => a.hosts.route(Iperf3::Takes, &a.streams.cpus, &a.common.reach),
            Command::Rr(a) => a.hosts.route(Iperf3::Refuses, &a.streams.cpus, &a.common.reach),
            _ => unreachable!("tcp, udp or rr"),
        };
        made.map(|(route, _)| route)
    }

    /// A usage error's text, after checking it is one (exit 2).
    fn refusal(args: &[&str]) -> String {
        let err = route(args).err().unwrap_or_else(|| panic!("{args:?} refused"));
        assert!(
            crate::cli::usage::is_usage(&err),
            "{args:?}: {err:#} is not a usage error"
        );
        err.to_string()
    }

    fn secret_file() -> String {
        let path = std::env::temp_dir().join(format!("linerate-route-test-{}", std::process::id()));
        std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").expect("writable");
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn the_host_flags_make_one_route() {
        let r = route(&["tcp", "127.0.0.1:7000", "127.0.0.2"]).unwrap();
        assert!(matches!(&r, Route::Agents { targets, from: None } if targets.len() == 2));
        assert_eq!(r.names(), ["127.0.0.1:7000", "127.0.0.2"]);
        assert_eq!(r.agents()[1].addr.port(), DEFAULT_PORT);

        let r = route(&["rr", "127.0.0.1", "--from", "127.0.0.2:7001"]).unwrap();
        match &r {
            Route::Agents { targets, from: Some(f) } => {
                assert_eq!((targets.len(), f.addr.to_string().as_str()), (1, "127.0.0.2:7001"));
            }
            _ => panic!("a third-party test from 127.0.0.2"),
        }

        for (args, name, port) in [
            (["tcp", "iperf3://127.0.0.1:5999"], "iperf3://127.0.0.1:5999", 5999),
            (["udp", "iperf3://127.0.0.1"], "iperf3://127.0.0.1", 5201),
        ] {
            let r = route(&args).unwrap();
            assert!(matches!(&r, Route::Iperf3(s) if s.addr.port() == port), "{args:?}");
            assert_eq!(r.names(), [name]);
            assert!(r.agents().is_empty());
        }

        let secret = secret_file();
        let hosts = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"];
        let mut args = vec![
            "tcp",
            "--pattern",
            "mesh",
            "--secret-file",
            &secret,
            "--different-nodes",
        ];
        args.extend(hosts);
        let r = route(&args).unwrap();
        match &r {
            Route::Fleet(f) => {
                assert_eq!((f.layout.cells.len(), f.layout.rounds.len()), (6, 6));
                assert!(f.different_nodes);
                assert_eq!(f.skew_bound, std::time::Duration::from_millis(10));
            }
            _ => panic!("a fleet"),
        }
        assert_eq!(r.names(), hosts, "the fleet's hosts, as the store keeps them");
        assert!(r.agents().is_empty(), "a fleet's agents are resolved by the driver");
        // Too few hosts for the pattern: refused before any clock is read.
        let one = refusal(&["udp", "--pattern", "mesh", "--secret-file", &secret, "127.0.0.1:1"]);
        assert!(one.contains("mesh needs at least 2 hosts"), "{one}");
        let _ = std::fs::remove_file(&secret);
    }

    #[test]
    fn each_route_refuses_the_flags_it_cannot_take() {
        for (args, says) in [
            (
                vec!["rr", "iperf3://127.0.0.1"],
                "`linerate tcp` or `linerate udp` only",
            ),
            (vec!["rr", "iperf3://127.0.0.1", "--pattern", "mesh"], "mesh needs"),
            (
                vec!["tcp", "iperf3://127.0.0.1", "--pattern", "mesh"],
                "--pattern runs between",
            ),
            (
                vec!["udp", "iperf3://127.0.0.1", "--different-nodes"],
                "--different-nodes runs between",
            ),
            (
                vec!["tcp", "127.0.0.1", "--different-nodes"],
                "--different-nodes filters",
            ),
            (
                vec!["udp", "--pair", "127.0.0.1,127.0.0.2"],
                "--pair names a pattern's pairs",
            ),
            (
                vec!["tcp", "127.0.0.1", "127.0.0.2", "--from", "127.0.0.3"],
                "--from without --pattern",
            ),
            (
                vec!["rr", "127.0.0.1", "--from", "127.0.0.2,127.0.0.3"],
                "--from without --pattern",
            ),
        ] {
            let e = refusal(&args);
            assert!(e.contains(says), "{args:?}: {e}");
        }
        // Without a secret (neither --secret-file nor LINERATE_SECRET), no pattern.
        if std::env::var_os("LINERATE_SECRET").is_none() {
            let e = refusal(&["tcp", "--pattern", "mesh", "127.0.0.1:1", "127.0.0.1:2"]);
            assert!(e.contains("share a secret"), "{e}");
        }
    }
}
