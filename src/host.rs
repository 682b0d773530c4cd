//! This host without a test: `sys` (its samplers live, or its configuration), `doctor` (its
//! configuration against tuning advice) and `calc` (the arithmetic of the wire).

use crate::cli;
use crate::finish::print_text;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// `linerate sys`: a line (or a JSON document) per interval until Ctrl-C or `--count`.
pub fn sys(args: &cli::sys::SysArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::metrics::sample::{HostInterval, HostSnapshot, HostUsage, IrqGroups, UsageBetween};
    if args.config {
        return sys_config(args);
    }
    let interval = args.interval()?;
    args.check_interfaces()?;
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;
    let mut prev = HostSnapshot::read();
    let groups = IrqGroups::discover(prev.interrupts.as_ref(), &prev.interfaces);
    let start = prev.at;
    let mut lines = 0u64;
    while args.count.is_none_or(|n| lines < n) {
        let due = prev.at + interval;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let left = due.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let now = HostSnapshot::read();
        let sample = HostInterval {
            start_ns: prev.at.duration_since(start).as_nanos() as u64,
            end_ns: now.at.duration_since(start).as_nanos() as u64,
            usage: HostUsage::between(&prev, &now, &groups, args.json),
        };
        let line = if args.json {
            linerate_report::json::headed(&sample, false)
        } else {
            linerate_report::sys::usage_line(&sample, &args.interfaces)
        };
        print_text(&format!("{line}\n"))?;
        prev = now;
        lines += 1;
    }
    Ok(ExitCode::SUCCESS)
}

/// `linerate calc goodput`.
pub fn calc(args: &cli::sys::CalcArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::goodput::{LinkKind, Transport, goodput};
    let cli::sys::CalcCommand::Goodput {
        link,
        mtu,
        ipv6,
        link_kind,
        json,
    } = &args.command;
    anyhow::ensure!(link.0 > 0.0, "--link must be above 0");
    anyhow::ensure!((68..=65_535).contains(mtu), "--mtu {mtu} is not between 68 and 65535");
    let kinds: &[LinkKind] = match link_kind {
        cli::sys::CalcLinkKind::Ethernet => &[LinkKind::Ethernet],
        cli::sys::CalcLinkKind::Tbf => &[LinkKind::Tbf],
        cli::sys::CalcLinkKind::Both => &LinkKind::ALL,
    };
    let rows: Vec<_> = kinds
        .iter()
        .flat_map(|k| [Transport::Tcp, Transport::Udp].map(|t| (t, *k)))
        .filter_map(|(t, k)| goodput(link.0, *mtu, t, *ipv6, k))
        .collect();
    let text = if *json {
        linerate_report::json::headed(&std::collections::BTreeMap::from([("rows", &rows)]), true)
    } else {
        linerate_report::sys::goodput_text(&rows)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `linerate sys --config`: the configuration of this host and of the interfaces named (default:
/// every interface of this network namespace).
fn sys_config(args: &cli::sys::SysArgs) -> anyhow::Result<ExitCode> {
    args.check_interfaces()?;
    let config = config_of(&args.interfaces);
    let text = if args.json {
        linerate_report::json::headed(&config, true)
    } else {
        linerate_report::sys::config_text(&config)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// This host's configuration, with the interfaces named (none: every interface of this network
/// namespace).
fn config_of(interfaces: &[String]) -> linerate_core::metrics::host::HostConfig {
    let names: Vec<String> = if interfaces.is_empty() {
        linerate_core::metrics::netdev::read()
            .into_iter()
            .map(|i| i.name)
            .collect()
    } else {
        interfaces.to_vec()
    };
    linerate_core::metrics::host::read_config(&names)
}

/// `linerate doctor`: this host's configuration against tuning advice. Exits 0 whatever it
/// finds: the findings are the output.
pub fn doctor(args: &cli::sys::DoctorArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::metrics::doctor::{DoctorInput, check};
    let rtt = args.rtt.map(Duration::from);
    if let Some(r) = args.rate {
        anyhow::ensure!(r.0 > 0.0, "--rate must be above 0");
    }
    let config = config_of(&args.interfaces);
    if let Some(missing) = config.interfaces.iter().find(|i| i.ifindex.is_none()) {
        anyhow::bail!("no interface named '{}' here", missing.name);
    }
    let findings = check(
        &config,
        &DoctorInput {
            rtt,
            rate_bits_per_second: args.rate.map(|r| r.0),
        },
    );
    let text = if args.json {
        linerate_report::json::headed(&std::collections::BTreeMap::from([("findings", &findings)]), true)
    } else {
        linerate_report::sys::doctor_text(&findings)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}
