//! linerate: parse -> spec -> run -> render -> exit code; nothing else.

mod cli;
mod lab;
mod live;

use anyhow::Context;
use clap::Parser;
use cli::{Cli, Command};
use linerate_core::agent::{self, AgentEvent};
use linerate_core::client::{ClientOptions, Target, run_tcp};
use linerate_core::result::{Role, TestResult};
use linerate_core::spec::TcpSpec;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind as K;
            if matches!(e.kind(), K::DisplayHelp | K::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // One line naming the problem, not clap's usage block.
            let text = e.render().to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let mut first = lines.next().unwrap_or("bad arguments").to_string();
            // "the following required arguments were not provided:" names them on the next line.
            if first.ends_with(':')
                && let Some(next) = lines.next()
            {
                first = format!("{first} {next}");
            }
            eprintln!("linerate: {} (see --help)", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("linerate: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve(&args),
        Command::Tcp(args) => {
            let targets = args.targets()?;
            let opts = args.reach.options()?;
            let json = args.json;
            let spec = args.into_spec()?;
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let mut result = tcp_test(&spec, &targets, &opts, json)
                .with_context(|| format!("tcp test against {}", names.join(", ")))?;
            record_lab(&mut result);
            print_result(&result, json)
        }
        Command::Udp(args) => {
            let targets = args.targets()?;
            let opts = args.reach.options()?;
            let json = args.json;
            let sweep = args.sweep()?;
            let spec = args.into_spec()?;
            if let Some(points) = sweep {
                return udp_sweep(&spec, &points, &targets, &opts, json);
            }
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let mut result = udp_test(&spec, &targets, &opts, json)
                .with_context(|| format!("udp test against {}", names.join(", ")))?;
            record_lab(&mut result);
            print_result(&result, json)
        }
        Command::Rr(args) => {
            let targets = args.targets()?;
            let opts = args.reach.options()?;
            let json = args.json;
            let sizes = args.sizes()?;
            let both = args.sweep == cli::rr::SweepWhat::Both;
            let expect: Vec<f64> = args.expect.iter().map(|r| r.0).collect();
            anyhow::ensure!(expect.iter().all(|b| *b > 0.0), "--expect bandwidths must be above 0");
            let spec = args.into_spec()?;
            if let Some(sizes) = sizes {
                let sweep = RrSweep {
                    sizes: &sizes,
                    both,
                    expect: &expect,
                };
                return rr_sweep(&spec, &sweep, &targets, &opts, json);
            }
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            let mut result = rr_test(&spec, &targets, &opts, json)
                .with_context(|| format!("rr test against {}", names.join(", ")))?;
            record_lab(&mut result);
            print_result(&result, json)
        }
        Command::Http(args) => http_command(&args),
        Command::Quick(args) => quick(&args),
        Command::Lab(args) => lab_command(args.command),
        Command::Sys(args) => sys(&args),
        Command::Doctor(args) => doctor(&args),
        Command::Calc(args) => calc(&args),
    }
}

/// `linerate sys`: a line (or a JSON document) per interval until Ctrl-C or `--count`.
fn sys(args: &cli::sys::SysArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::metrics::sample::{HostInterval, HostSnapshot, HostUsage, IrqGroups};
    if args.config {
        return sys_config(args);
    }
    let interval = args.interval()?;
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
            serde_json::to_string(&sample)?
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
fn calc(args: &cli::sys::CalcArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::goodput::{Transport, goodput};
    let cli::sys::CalcCommand::Goodput { link, mtu, ipv6, json } = &args.command;
    anyhow::ensure!(link.0 > 0.0, "--link must be above 0");
    anyhow::ensure!((68..=65_535).contains(mtu), "--mtu {mtu} is not between 68 and 65535");
    let rows: Vec<_> = [Transport::Tcp, Transport::Udp]
        .into_iter()
        .filter_map(|t| goodput(link.0, *mtu, t, *ipv6))
        .collect();
    let text = if *json {
        format!("{}\n", serde_json::to_string_pretty(&rows)?)
    } else {
        linerate_report::sys::goodput_text(&rows)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The process's Ctrl-C flag, registered once (sweeps run many tests): the first Ctrl-C (or
/// SIGTERM) stops the run and reports what was measured; a second one while stopping exits now.
fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    if let Some(f) = FLAG.get() {
        return Ok(Arc::clone(f));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(signal_hook::consts::SIGINT, 130, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupt))?;
    Ok(Arc::clone(FLAG.get_or_init(|| interrupt)))
}

/// Inside a lab (`linerate lab exec`), the result records the emulated links.
fn record_lab(result: &mut TestResult) {
    if let Some(name) = std::env::var_os("LINERATE_LAB").and_then(|n| n.into_string().ok())
        && let Ok(state) = lab::load(&name)
    {
        result.lab = Some(lab::status_json(&state));
    }
}

/// What this end does with each stream, for the live lines: `per_agent` streams per agent,
/// stream i sent by the client when `forward(i)`.
fn stream_roles(per_agent: usize, agents: usize, forward: impl Fn(usize) -> bool) -> Vec<Role> {
    (0..per_agent * agents)
        .map(|i| {
            if forward(i % per_agent) {
                Role::Send
            } else {
                Role::Receive
            }
        })
        .collect()
}

/// Runs a TCP test with live lines and Ctrl-C handling.
fn tcp_test(spec: &TcpSpec, targets: &[Target], opts: &ClientOptions, json: bool) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let roles = stream_roles(spec.streams_per_agent(), targets.len(), |i| {
        spec.stream_flows_forward(i)
    });
    let mut live = live::LiveLines::new(roles, json || spec.interval_seconds == 0.0);
    Ok(run_tcp(spec, targets, opts, &mut live, &interrupt)?)
}

/// `linerate udp --sizes ... --gaps ...`: one run per (gap, size), UDPmon's curves: received
/// throughput and loss against spacing, a column per size. JSON: every point's whole document.
fn udp_sweep(
    base: &linerate_core::spec::UdpSpec,
    points: &[(u32, u64)],
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut sizes: Vec<u32> = Vec::new();
    let mut gaps: Vec<u64> = Vec::new();
    for (size, gap) in points {
        if !sizes.contains(size) {
            sizes.push(*size);
        }
        if !gaps.contains(gap) {
            gaps.push(*gap);
        }
    }
    if !json {
        let mut head = format!("{:>10}", "gap us");
        for s in &sizes {
            head += &format!("  {:>22}", format!("{s} B: Mbit/s  loss %"));
        }
        print_text(&format!("received throughput and loss against spacing\n{head}\n"))?;
    }
    let mut out = Vec::with_capacity(points.len());
    for gap in &gaps {
        let mut row = format!("{:>10.1}", *gap as f64 / 1e3);
        for size in &sizes {
            let mut spec = base.clone();
            spec.payload_bytes = *size;
            spec.gap_ns = *gap;
            spec.interval_seconds = 0.0;
            spec.validate()?;
            let r = udp_test(&spec, targets, opts, true)
                .with_context(|| format!("sweep point {size} bytes, gap {} us", *gap as f64 / 1e3))?;
            let u = r.summary.udp.clone().unwrap_or_default();
            let mbps = r.summary.received.bits_per_second / 1e6;
            row += &format!("  {mbps:>14.1} {:>7.3}", u.loss_percent);
            out.push(serde_json::json!({
                "payload_bytes": size,
                "gap_us": *gap as f64 / 1e3,
                "received_bits_per_second": r.summary.received.bits_per_second,
                "packets_per_second": u.packets_per_second,
                "datagrams_sent": u.datagrams_sent,
                "lost": u.lost,
                "loss_percent": u.loss_percent,
                "out_of_order": u.out_of_order,
                "result": r,
            }));
        }
        if !json {
            print_text(&format!("{row}\n"))?;
        }
    }
    if json {
        let doc = serde_json::json!({
            "linerate": linerate_core::VERSION,
            "test": "udp sweep",
            "sizes_bytes": sizes,
            "gaps_us": gaps.iter().map(|g| *g as f64 / 1e3).collect::<Vec<_>>(),
            "points": out,
        });
        print_text(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        print_text(
            "Mbit/s = 10^6 bits of payload per second, counted by the receiver; loss against the sender's count.\n",
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs a UDP test with live lines and Ctrl-C handling.
fn udp_test(
    spec: &linerate_core::spec::UdpSpec,
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let roles = stream_roles(spec.streams_per_agent(), targets.len(), |i| {
        spec.stream_flows_forward(i)
    });
    let mut live = live::LiveLines::new(roles, json || spec.interval_seconds == 0.0);
    Ok(linerate_core::client::run_udp(
        spec, targets, opts, &mut live, &interrupt,
    )?)
}

/// Runs a request-response test with live lines and Ctrl-C handling.
fn rr_test(
    spec: &linerate_core::spec::RrSpec,
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let roles = vec![Role::Send; usize::from(spec.streams) * targets.len()];
    let mut live = live::LiveLines::new(roles, json || spec.interval_seconds == 0.0).per_second("transactions");
    Ok(linerate_core::client::run_rr(
        spec, targets, opts, &mut live, &interrupt,
    )?)
}

/// Runs an HTTP load with live lines and Ctrl-C handling.
fn http_test(
    spec: &linerate_core::spec::HttpSpec,
    targets: &[linerate_core::engine::http::HttpTarget],
    agent: Option<linerate_core::client::HttpAgent>,
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<TestResult> {
    let interrupt = interrupt_flag()?;
    let roles = vec![Role::Send; 1024];
    let mut live = live::LiveLines::new(roles, json || spec.interval_seconds == 0.0).per_second("responses");
    Ok(linerate_core::client::run_http(
        spec, targets, agent, opts, &mut live, &interrupt,
    )?)
}

/// Resolves the URLs into targets with their requests.
fn http_targets(
    urls: &[linerate_core::engine::http::HttpUrl],
    keepalive: bool,
) -> anyhow::Result<Vec<linerate_core::engine::http::HttpTarget>> {
    use std::net::ToSocketAddrs;
    urls.iter()
        .map(|u| {
            let addr = (u.host.as_str(), u.port)
                .to_socket_addrs()
                .with_context(|| format!("resolving '{}'", u.host))?
                .next()
                .with_context(|| format!("'{}' has no address", u.host))?;
            Ok(linerate_core::engine::http::HttpTarget::new(u, addr, keepalive))
        })
        .collect()
}

/// Fetches a URL once (5 s at most) and returns its body's length.
fn probe_body_bytes(target: &linerate_core::engine::http::HttpTarget) -> anyhow::Result<u64> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect_timeout(&target.addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(&target.request)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = s.read(&mut buf)?;
        anyhow::ensure!(n > 0, "closed before the response head");
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&head[..i]).to_ascii_lowercase();
            let len = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .context("the response has no Content-Length")?;
            return Ok(len);
        }
        anyhow::ensure!(head.len() < 65536, "response head over 64 KiB");
    }
}

/// `--baseline`: this client against linerate's own server on this host with the same users and
/// object size; (responses/s, bits/s in).
fn http_baseline(
    spec: &linerate_core::spec::HttpSpec,
    targets: &[linerate_core::engine::http::HttpTarget],
    opts: &ClientOptions,
) -> anyhow::Result<(f64, f64, u64)> {
    use linerate_core::httpd::{Httpd, HttpdConfig};
    let mut sizes = Vec::new();
    for t in targets {
        sizes.push(probe_body_bytes(t).with_context(|| format!("fetching {} once for --baseline", t.addr))?);
    }
    let size = sizes.iter().sum::<u64>() / sizes.len().max(1) as u64;
    let server = Httpd::bind(
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        HttpdConfig::default(),
    )?
    .spawn()?;
    let url = linerate_core::engine::http::HttpUrl::parse(&format!("http://{}/bytes/{size}", server.local_addr()))
        .map_err(anyhow::Error::msg)?;
    let mut b = spec.clone();
    b.urls = vec![format!("http://{}/bytes/{size}", server.local_addr())];
    b.ramp_seconds = 0.0;
    b.duration_seconds = spec.duration_seconds.min(5.0);
    b.interval_seconds = 0.0;
    let local = http_targets(std::slice::from_ref(&url), spec.keepalive)?;
    let r = http_test(&b, &local, None, opts, true)?;
    let h = r.summary.http.unwrap_or_default();
    Ok((h.responses_per_second, h.bits_per_second_in, size))
}

/// `linerate http`: one run, or a sweep over user counts with the optimum.
fn http_command(args: &cli::http::HttpArgs) -> anyhow::Result<ExitCode> {
    let urls = args.parsed_urls()?;
    let counts = args.user_counts()?;
    let base = args.spec_for(counts[0])?;
    let opts = args.reach.options()?;
    let targets = http_targets(&urls, args.keepalive)?;
    let baseline = if args.baseline {
        let b = http_baseline(&base, &targets, &opts).context("--baseline")?;
        if !args.json {
            print_text(&format!(
                "baseline: {} responses/s, {} Mbit/s in against linerate's own server on this host ({} B objects, {} users)\n",
                linerate_report::text::grouped(b.0, 1),
                linerate_report::text::grouped(b.1 / 1e6, 1),
                b.2,
                base.users
            ))?;
        }
        Some(b)
    } else {
        None
    };
    let with_baseline = |r: &mut TestResult| {
        let (Some((rps, bps, _)), Some(h)) = (baseline, r.summary.http.as_mut()) else {
            return;
        };
        let share = if rps > 0.0 { h.responses_per_second / rps } else { 0.0 };
        h.baseline = Some(linerate_core::result::Baseline {
            responses_per_second: rps,
            bits_per_second_in: bps,
            share_percent: 100.0 * share,
        });
        if share >= 0.9 {
            r.notes.push(format!(
                "the load generator may be the bottleneck: this run reached {:.0} % of the {:.0} responses/s this client drives against linerate's own server on this host",
                100.0 * share,
                rps
            ));
        }
    };
    let sweep = args.find_optimum || counts.len() > 1;
    if !sweep {
        let mut result = http_test(&base, &targets, args.agent(&urls)?, &opts, args.json)
            .with_context(|| format!("http test against {}", args.urls.join(" ")))?;
        with_baseline(&mut result);
        record_lab(&mut result);
        return print_result(&result, args.json);
    }
    if !args.json {
        print_text(&format!(
            "{:>7} {:>13} {:>12} {:>12} {:>12} {:>9}\n",
            "users", "responses/s", "Mbit/s in", "mean rt us", "p99 rt us", "errors"
        ))?;
    }
    let mut points = Vec::new();
    let mut power = Vec::new();
    let mut users = if args.find_optimum { 8 } else { counts[0] };
    let mut k = 0;
    loop {
        let spec = args.spec_for(users)?;
        let mut r = http_test(&spec, &targets, args.agent(&urls)?, &opts, true)
            .with_context(|| format!("http sweep point of {users} users"))?;
        with_baseline(&mut r);
        let h = r.summary.http.clone().unwrap_or_default();
        let rt = h.response_time_us.unwrap_or_default();
        power.push((users, h.responses_per_second, h.bits_per_second_in, rt.mean));
        if !args.json {
            print_text(&format!(
                "{users:>7} {:>13} {:>12} {:>12.1} {:>12.1} {:>9}\n",
                linerate_report::text::grouped(h.responses_per_second, 1),
                linerate_report::text::grouped(h.bits_per_second_in / 1e6, 1),
                rt.mean,
                rt.p99,
                h.errors.total
            ))?;
        }
        let partial = r.partial;
        points.push(r);
        if partial {
            break;
        }
        k += 1;
        if args.find_optimum {
            // Doubling stops once two doublings in a row added under 5 % of throughput.
            let n = power.len();
            let flat = |i: usize| power[i].1 < 1.05 * power[i - 1].1;
            if (n >= 3 && flat(n - 1) && flat(n - 2)) || users >= 16_384 {
                break;
            }
            users *= 2;
        } else {
            match counts.get(k) {
                Some(n) => users = *n,
                None => break,
            }
        }
    }
    let best = linerate_core::summary::http::optimum(&power);
    if args.json {
        let doc = serde_json::json!({
            "linerate": linerate_core::VERSION,
            "test": "http sweep",
            "users": power.iter().map(|p| p.0).collect::<Vec<_>>(),
            "points": points,
            "summary": { "optimum": best },
        });
        print_text(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else if let Some(o) = best {
        print_text(&format!(
            "optimum: {} users ({} responses/s, {} Mbit/s in, mean response time {:.1} us): {}\n",
            o.users,
            linerate_report::text::grouped(o.responses_per_second, 1),
            linerate_report::text::grouped(o.bits_per_second_in / 1e6, 1),
            o.response_time_mean_us,
            o.rule
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What a size sweep varies and what it is compared with.
struct RrSweep<'a> {
    sizes: &'a [u32],
    /// Responses grow with the requests.
    both: bool,
    /// Bandwidths of the path's stages, bits/s; empty: the link speed toward the first agent.
    expect: &'a [f64],
}

/// `linerate rr --sizes ...`: one run per size, in the order given; latency against size, its
/// least-squares line (through each point's p50) and the slope the data path should give.
/// A point that fails is reported and the sweep goes on.
fn rr_sweep(
    base: &linerate_core::spec::RrSpec,
    sweep: &RrSweep<'_>,
    targets: &[Target],
    opts: &ClientOptions,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use linerate_core::spec::RrProto;
    use linerate_core::summary::rr::{expected_slope, fit};
    let first = targets.first().context("no agent named")?;
    let towards = linerate_core::metrics::host::interface_towards(first.addr.ip());
    let iface = towards.as_ref().and_then(|n| {
        linerate_core::metrics::host::read_config(std::slice::from_ref(n))
            .interfaces
            .pop()
    });
    let mtu = iface.as_ref().and_then(|i| i.mtu_bytes);
    let (stages, expected_from): (Vec<f64>, String) = if sweep.expect.is_empty() {
        match iface
            .as_ref()
            .and_then(|i| i.speed_mbit_per_second.map(|s| (i.name.clone(), s)))
        {
            Some((name, mbit)) => (vec![f64::from(mbit) * 1e6], format!("link speed of {name}")),
            None => (Vec::new(), String::new()),
        }
    } else {
        (sweep.expect.to_vec(), "--expect".to_string())
    };
    let crossings = if sweep.both { 2.0 } else { 1.0 };
    let expected = (!stages.is_empty()).then(|| crossings * expected_slope(&stages));
    let proto = match base.proto {
        RrProto::Tcp => "tcp",
        RrProto::Udp => "udp",
    };
    if !json {
        print_text(&format!(
            "{proto} request-response against size ({}), {}\n{:>9} {:>9} {:>12} {:>10} {:>10} {:>10} {:>10} {:>8}  note\n",
            if sweep.both { "request and response" } else { "request" },
            match mtu {
                Some(m) => format!("MTU {m} B toward {}", towards.as_deref().unwrap_or("?")),
                None => "MTU unknown".to_string(),
            },
            "request B",
            "reply B",
            "trans/s",
            "min us",
            "p50 us",
            "mean us",
            "p99 us",
            "lost"
        ))?;
    }
    let mut points = Vec::with_capacity(sweep.sizes.len());
    let mut line = Vec::new();
    for &size in sweep.sizes {
        let mut spec = base.clone();
        spec.request_bytes = size;
        if sweep.both {
            spec.response_bytes = size;
        }
        spec.interval_seconds = 0.0;
        let mut note = mtu.and_then(|m| over_mtu_note(base.proto, size, m)).unwrap_or_default();
        let outcome = spec
            .validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| rr_test(&spec, targets, opts, true));
        let (row, point) = match outcome {
            Ok(r) => {
                let s = r.summary.rr.clone().unwrap_or_default();
                if r.partial {
                    note = join_note(&note, "interrupted");
                }
                let row = match &s.latency_us {
                    Some(l) => {
                        line.push((f64::from(size), l.p50));
                        format!(
                            "{:>12.1} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>8}",
                            s.transactions_per_second, l.min, l.p50, l.mean, l.p99, s.lost
                        )
                    }
                    None => {
                        note = join_note(&note, "no transaction completed");
                        format!(
                            "{:>12} {:>10} {:>10} {:>10} {:>10} {:>8}",
                            "-", "-", "-", "-", "-", s.lost
                        )
                    }
                };
                let point = serde_json::json!({
                    "request_bytes": spec.request_bytes,
                    "response_bytes": spec.response_bytes,
                    "transactions_per_second": s.transactions_per_second,
                    "latency_us": s.latency_us,
                    "lost": s.lost,
                    "note": note,
                    "result": r,
                });
                let stop = r.partial;
                (row, (point, stop))
            }
            Err(e) => {
                note = join_note(&note, &format!("failed: {e:#}"));
                let row = format!("{:>12} {:>10} {:>10} {:>10} {:>10} {:>8}", "-", "-", "-", "-", "-", "-");
                let point = serde_json::json!({
                    "request_bytes": spec.request_bytes,
                    "response_bytes": spec.response_bytes,
                    "error": format!("{e:#}"),
                    "note": note,
                });
                (row, (point, false))
            }
        };
        if !json {
            print_text(&format!(
                "{:>9} {:>9} {row}  {note}\n",
                spec.request_bytes, spec.response_bytes
            ))?;
        }
        let (point, stop) = point;
        points.push(point);
        if stop {
            break;
        }
    }
    let fitted = fit(&line);
    if json {
        let doc = serde_json::json!({
            "linerate": linerate_core::VERSION,
            "test": "rr sweep",
            "proto": proto,
            "sweep": if sweep.both { "both" } else { "request" },
            "sizes_bytes": sweep.sizes,
            "mtu_bytes": mtu,
            "points": points,
            "summary": {
                "fit": fitted,
                "fit_of": "p50",
                "expected_slope_us_per_byte": expected,
                "expected_from": if expected.is_some() { serde_json::json!(expected_from) } else { serde_json::Value::Null },
                "expected_stages_bits_per_second": stages,
            },
        });
        print_text(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        let mut text = String::new();
        match fitted {
            Some(f) => {
                text += &format!(
                    "fit of p50 against size: slope {:.6} us/byte, intercept {:.2} us, R^2 {:.4} over {} points\n",
                    f.slope_us_per_byte, f.intercept_us, f.r2, f.points
                );
                match expected {
                    Some(e) => {
                        text += &format!(
                            "expected slope {e:.6} us/byte (sum of 8/bandwidth over {} stage(s), {expected_from}{}): measured / expected {:.2}\n",
                            stages.len(),
                            if sweep.both { ", bytes crossing twice" } else { "" },
                            f.slope_us_per_byte / e
                        );
                    }
                    None => {
                        text += "no expected slope: the interface has no link speed (loopback, veth); give --expect\n"
                    }
                }
            }
            None => text += "no fit: fewer than two sizes gave round trips\n",
        }
        text += "us = microseconds of round trip (request sent to response received), per transaction; trans/s over all streams.\n";
        print_text(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn join_note(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}; {b}")
    }
}

/// A request larger than one packet: how the stack splits it.
fn over_mtu_note(proto: linerate_core::spec::RrProto, size: u32, mtu: u32) -> Option<String> {
    use linerate_core::spec::RrProto;
    match proto {
        RrProto::Udp if size + 28 > mtu => {
            // Every fragment but the last carries a multiple of 8 bytes after its 20-byte IP header.
            let per = (mtu.saturating_sub(20) / 8 * 8).max(8);
            Some(format!("over MTU {mtu}: {} IP fragments", (size + 8).div_ceil(per)))
        }
        RrProto::Tcp if size + 40 > mtu => Some(format!(
            "over MTU {mtu}: ~{} TCP segments",
            size.div_ceil(mtu.saturating_sub(52).max(1))
        )),
        _ => None,
    }
}

fn print_result(result: &TestResult, json: bool) -> anyhow::Result<ExitCode> {
    let text = if json {
        linerate_report::json::render(result)
    } else {
        format!("\n{}", linerate_report::text::render(result))
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn serve(args: &cli::serve::ServeArgs) -> anyhow::Result<ExitCode> {
    let config = agent::AgentConfig {
        bind: SocketAddr::new(args.bind, args.port),
        secret: args.secret.load()?,
        no_auth: args.no_auth,
        max_tests: usize::from(args.max_tests),
        max_connections: 256,
        joins: args.joins.clone(),
    };
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
    // `--http-port`: the HTTP server runs beside the agent, on the same address, as long as it.
    let http = match args.http_port {
        None => None,
        Some(port) => {
            use linerate_core::httpd::{Httpd, HttpdConfig, HttpdError};
            let config = HttpdConfig {
                files: args.files.clone(),
                ..HttpdConfig::default()
            };
            let httpd = match Httpd::bind(SocketAddr::new(args.bind, port), config.clone()) {
                Err(HttpdError::Bind { .. }) if args.bind == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED) => {
                    Httpd::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port), config)?
                }
                other => other?,
            };
            Some(httpd.spawn()?)
        }
    };
    // One write for both lines: a reader that stops after the first sees the second too.
    let mut lines = format!("linerate agent listening on {} ({auth})\n", agent.local_addr());
    if let Some(http) = &http {
        lines += &format!("linerate http server listening on {}\n", http.local_addr());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(lines.as_bytes())?;
    out.flush()?;
    drop(out);
    agent.serve(print_agent_event);
    drop(http);
    Ok(ExitCode::SUCCESS)
}

/// What `serve` (and `quick`'s agent) tells the user: a refused client, one line on stderr.
fn print_agent_event(event: &AgentEvent) {
    if let AgentEvent::Refused { peer, kind, message } = event {
        eprintln!("linerate serve: {peer}: {kind}: {message}");
    }
}

fn quick(args: &cli::quick::QuickArgs) -> anyhow::Result<ExitCode> {
    let agent = agent::Agent::bind(agent::AgentConfig {
        bind: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        secret: None,
        no_auth: false,
        max_tests: 1,
        max_connections: 64,
        joins: Vec::new(),
    })?;
    let addr = agent.local_addr();
    std::thread::spawn(move || agent.serve(print_agent_event));
    let mut spec = TcpSpec::new();
    spec.limit = linerate_core::spec::Limit::Seconds(args.time);
    spec.streams = args.streams;
    spec.validate()?;
    if !args.json {
        println!(
            "linerate quick: {} s of TCP over loopback to an agent started on {addr}",
            args.time
        );
    }
    let target = Target {
        name: addr.to_string(),
        addr,
    };
    let result = tcp_test(&spec, &[target], &ClientOptions::default(), args.json)?;
    print_result(&result, args.json)
}

fn print_text(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn lab_command(cmd: cli::lab::LabCommand) -> anyhow::Result<ExitCode> {
    use cli::lab::LabCommand as L;
    match cmd {
        L::Up {
            name,
            hosts,
            links,
            no_netem,
            json,
        } => {
            let state = lab::up(&lab::UpOptions {
                name: name.name,
                hosts,
                links,
                no_netem,
            })?;
            let v = lab::status_json(&state);
            print_text(&if json { format!("{v:#}\n") } else { lab::status_text(&v) })?;
        }
        L::Status { name, json } => {
            let v = lab::status_json(&lab::load(&name.name)?);
            print_text(&if json { format!("{v:#}\n") } else { lab::status_text(&v) })?;
        }
        L::Exec { name, host, command } => return Err(lab::exec(&name.name, &host, &command)),
        L::Down { name } => {
            let removed = lab::down(&name.name)?;
            let text = if removed.is_empty() {
                format!("lab '{}': nothing to remove\n", name.name)
            } else {
                removed.iter().map(|r| format!("removed {r}\n")).collect()
            };
            print_text(&text)?;
        }
        L::Relay { config } => {
            let text = std::fs::read_to_string(&config).with_context(|| format!("reading {}", config.display()))?;
            let config: lab::relay::RelayConfig = serde_json::from_str(&text)?;
            let stop = Arc::new(AtomicBool::new(false));
            signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;
            signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
            lab::relay::run(&config, &stop).context("link relay")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `linerate sys --config`: the configuration of this host and of the interfaces named (default:
/// every interface of this network namespace).
fn sys_config(args: &cli::sys::SysArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = if args.interfaces.is_empty() {
        linerate_core::metrics::netdev::read()
            .into_iter()
            .map(|i| i.name)
            .collect()
    } else {
        args.interfaces.clone()
    };
    let config = linerate_core::metrics::host::read_config(&names);
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&config)?)
    } else {
        linerate_report::sys::config_text(&config)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `linerate doctor`: this host's configuration against tuning advice. Exits 0 whatever it
/// finds: the findings are the output.
fn doctor(args: &cli::sys::DoctorArgs) -> anyhow::Result<ExitCode> {
    use linerate_core::metrics::doctor::{DoctorInput, check};
    let rtt = args
        .rtt
        .as_deref()
        .map(|t| lab::link::duration_us(t).map(Duration::from_micros))
        .transpose()
        .context("--rtt")?;
    if let Some(r) = args.rate {
        anyhow::ensure!(r.0 > 0.0, "--rate must be above 0");
    }
    let names: Vec<String> = if args.interfaces.is_empty() {
        linerate_core::metrics::netdev::read()
            .into_iter()
            .map(|i| i.name)
            .collect()
    } else {
        args.interfaces.clone()
    };
    let config = linerate_core::metrics::host::read_config(&names);
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
        format!("{}\n", serde_json::to_string_pretty(&findings)?)
    } else {
        linerate_report::sys::doctor_text(&findings)
    };
    print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}
