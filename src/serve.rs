//! `linerate serve`: an agent (and the HTTP server beside it), and what it tells the user of
//! refused clients: one short line per source per window, the rest counted. SIGTERM,
//! SIGINT and SIGHUP stop it: running tests end, the pending undo runs, and it exits 0; a second
//! signal exits at once (128 + the signal), the undo still run.

use crate::cli;
use crate::cli::usage::{Usage, usage};
use linerate_core::agent::{self, AgentEvent};
use linerate_core::result::TestResult;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

pub fn serve(args: &cli::serve::ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = agent::AgentConfig {
        secret: args.secret.load()?,
        no_auth: args.no_auth,
        max_tests: usize::from(args.max_tests),
        joins: args.joins.clone(),
        max_memory: args.max_memory.map_or_else(agent::default_budget_bytes, |b| b.0),
        idle: args.idle.map(|t| t.0).filter(|d| !d.is_zero()),
        // A bad --profile is a usage error (status 2), as a bad flag is.
        profiles: agent::Profiles::parse(&args.profiles).map_err(Usage::from)?,
        node: args
            .node_name
            .clone()
            .or_else(|| std::env::var("LINERATE_NODE").ok())
            .filter(|n| !n.is_empty()),
        clock_offset_ns: args.pretend_clock_offset_ms.saturating_mul(1_000_000),
        metrics: args.metrics,
        iperf3_port: args.iperf3_port,
        iperf3_allow: args.iperf3_allow.clone(),
        ..agent::AgentConfig::new(SocketAddr::new(args.bind, args.port))
    };
    // `--http-port`: the HTTP server runs beside the agent, on the same address, as long as it.
    let http = match args.http_port {
        None => None,
        Some(port) => {
            use linerate_core::httpd::HttpdConfig;
            if args.http_head_timeout.0.is_zero() {
                return Err(usage!("--http-head-timeout must be a positive number of seconds").into());
            }
            let config = HttpdConfig {
                files: args.files.clone(),
                head_timeout: args.http_head_timeout.0,
                idle: args.http_idle_timeout.0,
                max_connections_per_address: args.http_max_per_address,
                ..HttpdConfig::default()
            };
            Some(bind_httpd(args.bind, port, config)?.spawn()?)
        }
    };
    let https = match args.https_port {
        None => None,
        Some(port) => Some(https_server(args, port)?),
    };
    // The agent reports its servers' counts over an HTTP test against them.
    config.http_servers = http
        .iter()
        .chain(https.as_ref().map(|(h, _)| h))
        .map(|h| h.counters())
        .collect();
    let agent = match agent::Agent::bind(config.clone()) {
        // No IPv6 on this host: the default `::` falls back to every IPv4 address.
        Err(agent::AgentError::Bind { .. }) if args.bind == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) => {
            agent::Agent::bind(agent::AgentConfig {
                bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), args.port),
                ..config
            })?
        }
        other => other?,
    };
    let auth = if agent.auth_required() {
        "secret required"
    } else {
        "open"
    };
    // One write for both lines: a reader that stops after the first sees the second too.
    let mut lines = format!("linerate agent listening on {} ({auth})", agent.local_addr());
    if let Some(metrics) = agent.metrics_addr() {
        lines += &format!(", metrics on http://{metrics}/metrics");
    }
    lines.push('\n');
    if let Some(http) = &http {
        lines += &format!("linerate http server listening on {}\n", http.local_addr());
    }
    if let Some(iperf3) = agent.iperf3_addr() {
        lines += &format!("iperf3 server listening on {iperf3}\n");
    }
    if let Some((https, fingerprint)) = &https {
        lines += &format!(
            "linerate https server listening on {} (certificate SHA-256 {fingerprint})\n",
            https.local_addr()
        );
    }
    stop_on_signals(agent.stopper())?;
    let mut out = std::io::stdout().lock();
    out.write_all(lines.as_bytes())?;
    out.flush()?;
    drop(out);
    let db = args.db.clone();
    agent.serve(move |e| {
        print_agent_event(e);
        if let AgentEvent::Iperf3Result { peer, result } = e {
            keep_iperf3_result(*peer, result, db.as_deref());
        }
    });
    drop(http);
    drop(https);
    eprintln!("linerate serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// An iperf3 client's test: one line on stderr and, with `--db`, its document stored like any
/// run's (a store that fails costs a line, never the agent).
fn keep_iperf3_result(peer: SocketAddr, result: &TestResult, db: Option<&std::path::Path>) {
    let headline = linerate_report::headline::run_line(result);
    let version = result
        .iperf3
        .as_ref()
        .and_then(|p| p.version.as_deref())
        .unwrap_or("unknown version");
    let Some(path) = db else {
        eprintln!("linerate serve: iperf3 {version} client {peer}: {headline}");
        return;
    };
    let record = linerate_results::store::Record {
        document: linerate_report::json::render(result),
        outcome: result.outcome().into(),
        targets: vec![format!("iperf3-client://{peer}")],
        labels: Default::default(),
        command: "linerate serve --iperf3-port".into(),
        campaign: None,
    };
    match linerate_results::store::Store::open(path).and_then(|mut s| s.put(&record)) {
        Ok(id) => eprintln!("linerate serve: iperf3 {version} client {peer}: {headline} (stored as {id})"),
        Err(e) => eprintln!(
            "linerate serve: iperf3 {version} client {peer}: {headline} (not stored in {}: {e})",
            path.display()
        ),
    }
}

/// `--https-port`: the HTTP server over TLS, with `--cert`/`--key` or a certificate made now;
/// returns it running, with its certificate's fingerprint.
fn https_server(
    args: &crate::cli::serve::ServeArgs,
    port: u16,
) -> anyhow::Result<(linerate_core::httpd::HttpdHandle, String)> {
    use linerate_core::httpd::{HttpdConfig, HttpsIdentity};
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => HttpsIdentity::from_files(cert, key)?,
        _ => {
            let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
            if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
                let host = host.trim();
                if !host.is_empty() && host != "localhost" {
                    names.push(host.to_string());
                }
            }
            HttpsIdentity::self_signed(&names)?
        }
    };
    let config = HttpdConfig {
        files: args.files.clone(),
        head_timeout: args.http_head_timeout.0,
        idle: args.http_idle_timeout.0,
        max_connections_per_address: args.http_max_per_address,
        tls: Some(identity.config),
        ..HttpdConfig::default()
    };
    Ok((bind_httpd(args.bind, port, config)?.spawn()?, identity.fingerprint))
}

/// The HTTP server bound on `bind`:`port`; with no IPv6 on this host the default `::` falls back
/// to every IPv4 address, as the agent's does.
fn bind_httpd(
    bind: IpAddr,
    port: u16,
    config: linerate_core::httpd::HttpdConfig,
) -> anyhow::Result<linerate_core::httpd::Httpd> {
    use linerate_core::httpd::{Httpd, HttpdError};
    Ok(match Httpd::bind(SocketAddr::new(bind, port), config.clone()) {
        Err(HttpdError::Bind { .. }) if bind == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) => {
            Httpd::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port), config)?
        }
        other => other?,
    })
}

/// SIGTERM, SIGINT or SIGHUP stop the agent (`serve` then returns); a second one exits at once,
/// after the undo still pending has run.
fn stop_on_signals(stopper: agent::Stopper) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::Builder::new()
        .name("linerate-signals".into())
        .spawn(move || {
            let name = |s: i32| match s {
                SIGTERM => "SIGTERM",
                SIGINT => "SIGINT",
                _ => "SIGHUP",
            };
            let mut stopping = false;
            for signal in signals.forever() {
                if stopping {
                    eprintln!("linerate serve: {} again: stopping now", name(signal));
                    stopper.abandon();
                    std::process::exit(128 + signal);
                }
                stopping = true;
                eprintln!(
                    "linerate serve: {}: stopping (running tests end, a pending undo runs; a second signal stops at once)",
                    name(signal)
                );
                stopper.stop();
            }
        })?;
    Ok(())
}

/// What `serve` (and `quick`'s agent) tells the user: a refused client, one line on stderr.
pub fn print_agent_event(event: &AgentEvent) {
    static LOG: std::sync::Mutex<Option<RefusalLog>> = std::sync::Mutex::new(None);
    if let AgentEvent::Refused { peer, kind, message } = event {
        let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
        let (print, earlier) = log
            .get_or_insert_with(RefusalLog::default)
            .admit(refusal_source(peer.ip()), std::time::Instant::now());
        if let Some(n) = earlier {
            eprintln!(
                "linerate serve: {n} more refused from {}{} in the last {} s",
                refusal_source(peer.ip()),
                if peer.ip().to_canonical().is_ipv6() { "/64" } else { "" },
                REFUSAL_WINDOW.as_secs()
            );
        }
        if print {
            // `message` comes cut and escaped from the agent (it may quote the peer).
            eprintln!("linerate serve: {peer}: {kind}: {message}");
        }
    }
    if let AgentEvent::UndoFailed { profile, message } = event {
        // Not rate-limited: one per profiled test at most, and the owner must see each one.
        eprintln!("linerate serve: profile '{profile}': its undo failed, the host may still be changed: {message}");
    }
}

/// Whom refusals are counted against: an IPv4 address, or an IPv6 one's /64 (one host commonly
/// holds a whole /64), as the agent caps them.
fn refusal_source(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

/// One refusal line per source address per window; the rest are counted and summed up in one
/// line when that address is next refused after the window (a refusal flood must not
/// grow the log).
const REFUSAL_WINDOW: Duration = Duration::from_secs(10);
/// Addresses remembered at most; past it, those whose window is over are forgotten.
const REFUSAL_ADDRESSES: usize = 4096;

#[derive(Default)]
struct RefusalLog {
    /// Per address: when its window began and how many refusals were not printed in it.
    by_address: std::collections::HashMap<IpAddr, (std::time::Instant, u64)>,
}

impl RefusalLog {
    /// Whether to print this refusal, and how many went unprinted in the address's last window.
    fn admit(&mut self, ip: IpAddr, now: std::time::Instant) -> (bool, Option<u64>) {
        if self.by_address.len() >= REFUSAL_ADDRESSES {
            self.by_address
                .retain(|_, (t, _)| now.duration_since(*t) < REFUSAL_WINDOW);
        }
        let full = self.by_address.len() >= REFUSAL_ADDRESSES;
        match self.by_address.get_mut(&ip) {
            Some((start, quiet)) if now.duration_since(*start) < REFUSAL_WINDOW => {
                *quiet += 1;
                (false, None)
            }
            Some((start, quiet)) => {
                let earlier = (*quiet > 0).then_some(*quiet);
                (*start, *quiet) = (now, 0);
                (true, earlier)
            }
            None if full => (false, None),
            None => {
                self.by_address.insert(ip, (now, 0));
                (true, None)
            }
        }
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;

    #[test]
    fn issue_14_a_refusal_flood_prints_one_line_per_address_per_window() {
        let mut log = RefusalLog::default();
        let t0 = std::time::Instant::now();
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        assert_eq!(log.admit(a, t0), (true, None));
        for i in 1..1000 {
            assert_eq!(log.admit(a, t0 + Duration::from_millis(i)), (false, None));
        }
        assert_eq!(
            log.admit(b, t0 + Duration::from_secs(1)),
            (true, None),
            "another address"
        );
        assert_eq!(log.admit(a, t0 + Duration::from_secs(11)), (true, Some(999)));
        assert_eq!(log.admit(a, t0 + Duration::from_secs(22)), (true, None));
        let one_host = |s: &str| refusal_source(s.parse().expect("ip"));
        assert_eq!(one_host("2001:db8::1"), one_host("2001:db8::ffff:7"));
        assert_ne!(one_host("2001:db8::1"), one_host("2001:db8:0:1::1"));
        assert_eq!(one_host("::ffff:10.0.0.1"), one_host("10.0.0.1"));
    }
}
