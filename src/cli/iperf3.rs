//! `iperf3://HOST[:PORT]` as the target of `linerate tcp` and `linerate udp` (the route,
//! `common::Route::Iperf3`, found among the hosts): the flags checked against what iperf3's
//! parameters can say (docs/iperf3.md). A flag that cannot map is a usage error naming it, before any
//! connection; what maps is sent by `linerate_core::client::run_iperf3`.

use super::ConnectArgs;
use super::usage::{Usage, usage};
use linerate_core::client::IPERF3_SCHEME;
use linerate_core::spec::{TcpSpec, Timing, UdpSpec};

/// What every kind checks: the timing in iperf3's whole seconds, the agent-only flags.
fn common(timing: &Timing, peer_cpus: &[usize], reach: &ConnectArgs) -> Result<(), Usage> {
    if timing.warmup_seconds.fract() != 0.0 {
        return Err(usage!(
            "--warmup {} s: iperf3's omit takes whole seconds against an {IPERF3_SCHEME} target",
            timing.warmup_seconds
        ));
    }
    if timing.cooldown_seconds > 0.0 {
        return Err(usage!(
            "--cooldown cannot map to iperf3 (its figures run to the test's end): leave it out against an {IPERF3_SCHEME} target"
        ));
    }
    if peer_cpus.len() > 1 {
        return Err(usage!(
            "--peer-cpus takes one CPU against an {IPERF3_SCHEME} target (iperf3 pins its server to one, -A)"
        ));
    }
    if reach.profile.is_some() {
        return Err(usage!(
            "--profile names a linerate agent's profile; an iperf3 server has none"
        ));
    }
    Ok(())
}

/// `linerate tcp iperf3://...`: `--mix` and `--sndbuf` have no iperf3 parameter.
pub fn check_tcp(spec: &TcpSpec, reach: &ConnectArgs) -> Result<(), Usage> {
    common(&spec.timing, &spec.peer_cpus, reach)?;
    no_dscp(&spec.dscp)?;
    if spec.mix.is_some() {
        return Err(usage!(
            "--mix is linerate's own workload; an iperf3 server cannot run it"
        ));
    }
    if spec.sndbuf_bytes.is_some() {
        return Err(usage!(
            "--sndbuf cannot map to iperf3 (its -w sets both buffers): use --window against an {IPERF3_SCHEME} target"
        ));
    }
    Ok(())
}

/// `--dscp` marks both ends' sockets; linerate's iperf3 client marks none (iperf3's own `-S`
/// sets one TOS for every stream, not a class per stream).
fn no_dscp(classes: &[linerate_core::spec::Dscp]) -> Result<(), Usage> {
    if classes.is_empty() {
        return Ok(());
    }
    Err(usage!(
        "--dscp marks linerate's two ends; an {IPERF3_SCHEME} target is not marked"
    ))
}

/// `linerate udp iperf3://...`: no multicast, and iperf3's datagram times are its monotonic
/// clock, not comparable with this host's (`--synced-clocks`).
pub fn check_udp(spec: &UdpSpec, reach: &ConnectArgs) -> Result<(), Usage> {
    common(&spec.timing, &spec.peer_cpus, reach)?;
    no_dscp(&spec.dscp)?;
    if spec.multicast.is_some() {
        return Err(usage!(
            "--multicast runs between linerate agents; an iperf3 server cannot join a group"
        ));
    }
    if spec.timing.limit.count().is_some() && spec.direction != linerate_core::spec::Direction::Send {
        return Err(usage!(
            "-n with -R or --bidir: iperf3's UDP sender does not stop at its block count; give -t against an {IPERF3_SCHEME} target"
        ));
    }
    if spec.synced_clocks {
        return Err(usage!(
            "--synced-clocks: iperf3 stamps datagrams with its monotonic clock, so no one-way delay can be read"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// The usage error (if any) of `linerate KIND ARGS` against an iperf3 target.
    fn refusal(args: &[&str]) -> Option<String> {
        let full = [&["linerate"][..], args].concat();
        let cli = Cli::try_parse_from(full).expect("parses");
        let checked = match cli.command {
            Command::Tcp(a) => a.hosts.iperf3_server().and_then(|_| {
                let reach = a.reach.clone();
                Ok(super::check_tcp(&a.into_spec()?, &reach)?)
            }),
            Command::Udp(a) => a.hosts.iperf3_server().and_then(|_| {
                let reach = a.common.reach.clone();
                Ok(super::check_udp(&a.into_spec()?, &reach)?)
            }),
            _ => unreachable!("tcp or udp"),
        };
        checked.err().map(|e| e.to_string())
    }

    #[test]
    fn issue_26_flags_that_cannot_map_to_iperf3_are_refused_by_name() {
        let t = "iperf3://127.0.0.1:5999";
        assert_eq!(
            refusal(&["tcp", t, "-P", "4", "-R", "-t", "2.5", "--warmup", "1"]),
            None
        );
        assert_eq!(refusal(&["udp", t, "--bidir", "-b", "10m", "-t", "2"]), None);
        assert_eq!(refusal(&["udp", t, "-b", "10m", "-n", "100"]), None);
        for (args, flag) in [
            (vec!["tcp", t, "127.0.0.1"], "only HOST"),
            (vec!["tcp", t, "iperf3://127.0.0.1:6000"], "only HOST"),
            (vec!["tcp", t, "--mix", "70:30"], "--mix"),
            (vec!["tcp", t, "--sndbuf", "1M"], "--sndbuf"),
            (vec!["tcp", t, "--warmup", "500ms"], "--warmup"),
            (vec!["tcp", t, "--cooldown", "1"], "--cooldown"),
            (vec!["tcp", t, "--peer-cpus", "0,1"], "--peer-cpus"),
            (vec!["tcp", t, "--profile", "x"], "--profile"),
            (vec!["tcp", t, "--from", "127.0.0.1"], "--from"),
            (vec!["tcp", t, "--pattern", "mesh"], "--pattern"),
            (vec!["udp", t, "--multicast", "239.1.1.1"], "--multicast"),
            (vec!["udp", t, "--synced-clocks"], "--synced-clocks"),
            (vec!["udp", t, "-R", "-n", "100"], "-n with -R"),
        ] {
            let e = refusal(&args).unwrap_or_else(|| panic!("{args:?} refused"));
            assert!(e.contains(flag), "{args:?}: {e}");
        }
    }
}
