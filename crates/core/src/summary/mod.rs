//! Assembling the result document: the client's and each agent's [`SideReport`] of one run
//! joined into one [`TestResult`]. Counts stay attributed to the side that counted them (`sent`
//! = the sender's figure, `received` = the receiver's).
//!
//! Sits above the engines (it reads their reports and constants) and below the client, which
//! calls it once a run is over. `assemble` joins a TCP, UDP or request-response run; each kind
//! adds its own figures from its module (`tcp`, `udp`, `rr`); an HTTP run has its own
//! `http::assemble`. The types they fill in are in `crate::result`.

pub(crate) mod check;
pub use check::escape_controls;
pub mod http;
pub mod iperf3;
pub mod relayed;
pub mod rr;
mod tcp;
mod udp;

pub use tcp::assemble_tcp;

use crate::goodput::Goodput;
use crate::metrics::cpu::CpuSplit;
use crate::metrics::host::HostInfo;
use crate::metrics::sample::{HostUsage, InterfaceUsage, InterruptRates, ProcessUsage, StackUsage};
use crate::result::{
    AgentSummary, Counted, DirectionSummary, Efficiency, ErrorCounts, HostIntervalRecord, HostRecord, IntervalRecord,
    LineRate, Role, SCHEMA, SideReport, SideSummary, StreamInterval, StreamReport, StreamSummary, Summary, TestResult,
};
use crate::spec::TestSpec;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// What the client knows of one agent after a run.
pub struct AgentOutcome<'a> {
    pub name: &'a str,
    pub host: Option<&'a HostInfo>,
    /// The agent's own report; None if it never came (the agent vanished).
    pub report: Option<&'a SideReport>,
    /// The client's report restricted to this agent's streams, renumbered 0.. per agent.
    pub client: &'a SideReport,
}

fn direction_name(forward: bool) -> &'static str {
    if forward { "forward" } else { "reverse" }
}

/// Stream `index` of one agent as its two ends reported it, told apart by each report's own
/// role: the sender's report, the receiver's, and whether the stream flowed forward (client to
/// agent; None when neither end reported it).
pub(crate) struct Ends<'a> {
    pub snd: Option<&'a StreamReport>,
    pub rcv: Option<&'a StreamReport>,
    pub forward: Option<bool>,
}

impl<'a> Ends<'a> {
    pub(crate) fn of(a: &AgentOutcome<'a>, index: usize) -> Ends<'a> {
        let find = |r: &'a SideReport| r.streams.iter().find(|s| usize::from(s.stream) == index);
        let (client, agent) = (find(a.client), a.report.and_then(find));
        let forward = client
            .map(|c| c.role.flows_forward(true))
            .or(agent.map(|g| g.role.flows_forward(false)));
        let (snd, rcv) = if forward == Some(false) {
            (agent, client)
        } else {
            (client, agent)
        };
        Ends { snd, rcv, forward }
    }
}

/// A stream's count within a report, with the report's owner, its host and CPU.
struct Entry<'a> {
    owner: &'a str,
    /// The owner's host identity (boot id, network namespace); None when unknown.
    host: Option<&'a HostInfo>,
    report: &'a SideReport,
    stream: &'a StreamReport,
}

/// One counting end's host samplers, with what identifies its host (issue 13: two agents on one
/// host summed the host's interrupts twice).
#[derive(Clone, Copy)]
struct Counter<'a> {
    name: &'a str,
    usage: &'a HostUsage,
    /// The machine: its boot id, else the end's own name (an unknown host is a host of its own).
    machine: &'a str,
    /// The network namespace within the machine, else the end's name.
    namespace: &'a str,
}

impl<'a> Counter<'a> {
    fn new(name: &'a str, host: Option<&'a HostInfo>, report: &'a SideReport) -> Option<Counter<'a>> {
        let boot = host.and_then(|h| h.boot_id.as_deref());
        Some(Counter {
            name,
            usage: report.host.as_ref()?,
            machine: boot.unwrap_or(name),
            namespace: boot.and(host.and_then(|h| h.net_namespace.as_deref())).unwrap_or(name),
        })
    }
}

/// Process shares of the host: added up over the processes of one machine, averaged over
/// machines (a share of one host added to a share of another means nothing).
fn process_share(shares: &[(&str, Option<f64>)]) -> Option<f64> {
    let mut per_machine: Vec<(&str, f64)> = Vec::new();
    for (machine, share) in shares {
        let Some(v) = share else { continue };
        match per_machine.iter_mut().find(|(m, _)| m == machine) {
            Some((_, t)) => *t += v,
            None => per_machine.push((machine, *v)),
        }
    }
    (!per_machine.is_empty()).then(|| {
        let mean = per_machine.iter().map(|(_, v)| v).sum::<f64>() / per_machine.len() as f64;
        mean.min(100.0)
    })
}

fn summarise(entries: &[Entry<'_>], sending: bool) -> SideSummary {
    let mut s = SideSummary::default();
    let mut owners: Vec<(&str, Option<&HostInfo>)> = Vec::new();
    let mut reports: Vec<&SideReport> = Vec::new();
    for e in entries {
        s.bytes += e.stream.bytes;
        s.ops += e.stream.ops;
        s.streams += 1;
        s.seconds = s.seconds.max(e.stream.seconds);
        if !owners.iter().any(|(o, _)| *o == e.owner) {
            owners.push((e.owner, e.host));
            reports.push(e.report);
        }
    }
    s.bits_per_second = Counted::new(s.bytes, s.seconds).bits_per_second;
    let ends: Vec<(&str, Option<&HostInfo>, &SideReport)> =
        owners.iter().zip(&reports).map(|((o, h), r)| (*o, *h, *r)).collect();
    add_ends(&mut s, &ends);
    if sending {
        s.tcp = tcp::totals(entries.iter().map(|e| (e.stream, e.report)), s.bits_per_second);
    }
    s
}

/// The counting ends (owner, host, report) into a side: who counted, their CPU (host CPU is
/// host-wide: one figure per distinct machine, averaged over machines; linerate's own share as
/// [`process_share`] has it) and their host samplers, each host once.
fn add_ends(s: &mut SideSummary, ends: &[(&str, Option<&HostInfo>, &SideReport)]) {
    s.counted_by = ends.iter().map(|(o, _, _)| o.to_string()).collect();
    let machine = |i: usize| ends[i].1.and_then(|h| h.boot_id.as_deref()).unwrap_or(ends[i].0);
    let mut seen: Vec<&str> = Vec::new();
    let mut host_percents = Vec::new();
    for (i, (_, _, r)) in ends.iter().enumerate() {
        if !seen.contains(&machine(i)) {
            seen.push(machine(i));
            host_percents.extend(r.cpu.host_percent);
        }
    }
    s.cpu.host_percent =
        (!host_percents.is_empty()).then(|| host_percents.iter().sum::<f64>() / host_percents.len() as f64);
    let shares: Vec<(&str, Option<f64>)> = ends
        .iter()
        .enumerate()
        .map(|(i, (_, _, r))| (machine(i), r.cpu.process_percent_of_host))
        .collect();
    s.cpu.process_percent_of_host = process_share(&shares);
    s.cpu.process_user_seconds = ends.iter().map(|(_, _, r)| r.cpu.process_user_seconds).sum();
    s.cpu.process_system_seconds = ends.iter().map(|(_, _, r)| r.cpu.process_system_seconds).sum();
    let counters: Vec<Counter<'_>> = ends.iter().filter_map(|(o, h, r)| Counter::new(o, *h, r)).collect();
    add_host_usage(s, &counters);
}

/// A side counted by several hosts together (the servers of an HTTP load, each with its agent):
/// given counts over `seconds`, each host's samplers counted once.
pub(crate) fn hosts_side_summary(
    ends: &[(&str, Option<&HostInfo>, &SideReport)],
    bytes: u64,
    ops: u64,
    seconds: f64,
) -> SideSummary {
    let mut s = counted_side(bytes, ops, seconds);
    add_ends(&mut s, ends);
    s
}

/// A side of `bytes` and `ops` counted over `seconds`, its hosts' figures to come.
fn counted_side(bytes: u64, ops: u64, seconds: f64) -> SideSummary {
    SideSummary {
        bytes,
        seconds,
        bits_per_second: Counted::new(bytes, seconds).bits_per_second,
        ops,
        ..Default::default()
    }
}

/// A side counted by one host alone (an HTTP client, an HTTP server's agent): given counts over
/// `seconds`, with that host's samplers over its window.
pub(crate) fn host_side_summary(
    owner: &str,
    report: &SideReport,
    bytes: u64,
    ops: u64,
    streams: usize,
    seconds: f64,
) -> SideSummary {
    let mut s = SideSummary {
        streams,
        counted_by: vec![owner.to_string()],
        cpu: report.cpu.clone(),
        ..counted_side(bytes, ops, seconds)
    };
    let counters: Vec<Counter<'_>> = Counter::new(owner, None, report).into_iter().collect();
    add_host_usage(&mut s, &counters);
    s
}

/// The counting ends' samplers into a side's summary, each host counted once (issue 13):
/// host-wide counters (CPU, interrupts, softirqs, softnet, memory) once per distinct machine
/// (boot id), interface and stack counters once per distinct network namespace, linerate's own
/// process figures once per process. One machine and namespace: copied; several: totals summed,
/// CPU split averaged, interfaces named END/IF.
fn add_host_usage(s: &mut SideSummary, counters: &[Counter<'_>]) {
    let machines: Vec<&Counter<'_>> = (0..counters.len())
        .filter(|&i| !counters[..i].iter().any(|c| c.machine == counters[i].machine))
        .map(|i| &counters[i])
        .collect();
    let namespaces: Vec<&Counter<'_>> = (0..counters.len())
        .filter(|&i| {
            !counters[..i]
                .iter()
                .any(|c| (c.machine, c.namespace) == (counters[i].machine, counters[i].namespace))
        })
        .map(|i| &counters[i])
        .collect();
    s.hosts = machines.len();
    // linerate's processes: one per counting end, wherever they ran.
    for c in counters {
        if let Some(p) = c.usage.process {
            let t = s.process.get_or_insert_with(ProcessUsage::default);
            t.user_seconds += p.user_seconds;
            t.system_seconds += p.system_seconds;
            t.voluntary_context_switches += p.voluntary_context_switches;
            t.involuntary_context_switches += p.involuntary_context_switches;
        }
    }
    if let Some(p) = s.process.as_mut() {
        let shares: Vec<(&str, Option<f64>)> = counters
            .iter()
            .map(|c| (c.machine, c.usage.process.and_then(|p| p.percent_of_host)))
            .collect();
        p.percent_of_host = process_share(&shares);
    }
    if let ([m], [n]) = (&machines[..], &namespaces[..]) {
        let h = m.usage;
        s.cpu.split = h.cpu;
        s.cpu.per_cpu = h.per_cpu.clone();
        s.interrupts_per_second = h.interrupts_per_second.clone();
        s.softirqs_per_second = h.softirqs_per_second.clone();
        s.interfaces = n.usage.interfaces.clone();
        s.stack = n.usage.stack;
        s.memory = h.memory;
    } else if !machines.is_empty() {
        let splits: Vec<CpuSplit> = machines.iter().filter_map(|c| c.usage.cpu).collect();
        if !splits.is_empty() {
            let n = splits.len() as f64;
            let mean = |f: fn(&CpuSplit) -> f64| splits.iter().map(f).sum::<f64>() / n;
            s.cpu.split = Some(CpuSplit {
                cpu: None,
                busy: mean(|c| c.busy),
                user: mean(|c| c.user),
                system: mean(|c| c.system),
                irq: mean(|c| c.irq),
                softirq: mean(|c| c.softirq),
                iowait: mean(|c| c.iowait),
                steal: mean(|c| c.steal),
                idle: mean(|c| c.idle),
            });
        }
        if let [m] = &machines[..] {
            s.cpu.per_cpu = m.usage.per_cpu.clone();
            s.memory = m.usage.memory;
        }
        let mut ints = InterruptRates::default();
        for c in &machines {
            if let Some(i) = &c.usage.interrupts_per_second {
                ints.total += i.total;
                for (iface, rate) in &i.per_interface {
                    ints.per_interface.insert(format!("{}/{iface}", c.name), *rate);
                }
            }
            for (kind, r) in &c.usage.softirqs_per_second {
                s.softirqs_per_second.entry(kind.clone()).or_default().total += r.total;
            }
        }
        for c in &namespaces {
            let h = c.usage;
            s.interfaces.extend(h.interfaces.iter().map(|i| InterfaceUsage {
                name: format!("{}/{}", c.name, i.name),
                ..i.clone()
            }));
            if let Some(st) = h.stack {
                // softnet is the machine's, not the namespace's: once per machine.
                let machine_first = machines.iter().any(|m| std::ptr::eq(*m, *c));
                let t = s.stack.get_or_insert_with(StackUsage::default);
                t.tcp_retransmitted_segments += st.tcp_retransmitted_segments;
                t.tcp_out_segments += st.tcp_out_segments;
                t.tcp_in_segments += st.tcp_in_segments;
                t.udp_in_datagrams += st.udp_in_datagrams;
                t.udp_out_datagrams += st.udp_out_datagrams;
                t.udp_receive_buffer_errors += st.udp_receive_buffer_errors;
                t.udp_send_buffer_errors += st.udp_send_buffer_errors;
                if machine_first {
                    t.softnet_processed += st.softnet_processed;
                    t.softnet_dropped += st.softnet_dropped;
                    t.softnet_squeezed += st.softnet_squeezed;
                }
            }
        }
        s.interrupts_per_second = Some(ints);
    }
    let hosts: Vec<(&str, &HostUsage)> = machines.iter().map(|c| (c.name, c.usage)).collect();
    s.efficiency = efficiency(s.bytes, s.bits_per_second, &hosts);
}

/// Throughput per busy core, CPU per Gbit/s and cycles per byte of the counting hosts.
pub(crate) fn efficiency(bytes: u64, bits_per_second: f64, hosts: &[(&str, &HostUsage)]) -> Option<Efficiency> {
    let mut busy_cores = 0.0;
    let mut cycles = Some(0.0);
    for (_, h) in hosts {
        let cores = h.busy_cores()?;
        busy_cores += cores;
        cycles = cycles
            .zip(h.clock_mhz)
            .map(|(c, mhz)| c + cores * h.seconds * mhz * 1e6);
    }
    let gbit = bits_per_second / 1e9;
    if hosts.is_empty() || busy_cores <= 0.0 || gbit <= 0.0 || bytes == 0 {
        return None;
    }
    Some(Efficiency {
        busy_cores,
        gbit_per_core: gbit / busy_cores,
        cpu_percent_per_gbit: 100.0 * busy_cores / gbit,
        cycles_per_byte: cycles.map(|c| c / bytes as f64),
    })
}

/// The side's throughput against what the wire allows.
pub(crate) fn line_rate(s: &SideSummary, g: &Goodput, source: &str) -> LineRate {
    LineRate {
        link_bits_per_second: g.link_bits_per_second,
        mtu_bytes: g.mtu_bytes,
        limit_bits_per_second: g.bits_per_second,
        percent: 100.0 * s.bits_per_second / g.bits_per_second,
        source: source.to_string(),
        link_kind: g.link_kind,
    }
}

/// In a lab whose rate tbf emulates, a given `--link-speed` is the shaped link's: each side's
/// line rate is taken again as tbf counts packets (issue 23; [`crate::goodput::LinkKind`]).
pub(crate) fn line_rate_in_lab(result: &mut TestResult) {
    use crate::goodput::{LinkKind, rerate};
    let tbf = result
        .lab
        .as_ref()
        .is_some_and(|lab| lab.hosts.iter().any(|h| h.backends.rate.as_deref() == Some("tbf")));
    if !tbf {
        return;
    }
    let s = &mut result.summary;
    let mut sides: Vec<&mut SideSummary> = vec![&mut s.sent, &mut s.received];
    for d in s.directions.iter_mut().flat_map(|d| d.values_mut()) {
        sides.extend([&mut d.sent, &mut d.received]);
    }
    for a in &mut s.agents {
        sides.extend([&mut a.sent, &mut a.received]);
    }
    for l in sides.into_iter().filter_map(|s| s.line_rate.as_mut()) {
        if l.source != "given" || l.link_kind != LinkKind::Ethernet {
            continue;
        }
        let limit = rerate(l.limit_bits_per_second, l.mtu_bytes, LinkKind::Ethernet, LinkKind::Tbf);
        l.percent *= l.limit_bits_per_second / limit;
        l.limit_bits_per_second = limit;
        l.link_kind = LinkKind::Tbf;
        l.source.push_str(", a tbf-shaped lab link");
    }
}

/// A TCP run's line-rate figure: against `--link-speed` (and `--mtu`, else the path MTU the
/// senders saw, `path_mtu`), or a physical interface's speed found in the client's configuration.
/// None: no speed to compare with; `Err`: a note saying why there is no figure.
fn tcp_line_rate(
    spec: &crate::spec::TcpSpec,
    client: Option<&crate::metrics::host::HostConfig>,
    path_mtu: Option<u32>,
    ipv6: bool,
) -> Result<Option<(Goodput, String)>, String> {
    // A physical interface's link speed (a veth's or a bridge's "speed" is made up).
    let detected = client.and_then(|c| {
        c.interfaces
            .iter()
            .find(|i| i.kind.is_none() && !i.loopback && i.speed_mbit_per_second.is_some_and(|s| s > 0))
    });
    let (speed, mtu, source) = match (spec.link_speed, detected) {
        (Some(speed), _) => (speed.0, spec.link_mtu_bytes.or(path_mtu), "given".to_string()),
        (None, Some(i)) => (
            f64::from(i.speed_mbit_per_second.unwrap_or(0)) * 1e6,
            spec.link_mtu_bytes.or(i.mtu_bytes).or(path_mtu),
            format!("detected: {} on client", i.name),
        ),
        (None, None) => return Ok(None),
    };
    let Some(mtu) = mtu else { return Ok(None) };
    // A physical interface, or a given speed: Ethernet on the wire ([`line_rate_in_lab`] takes a
    // given speed again for a tbf-shaped lab link once the lab is known).
    let kind = crate::goodput::LinkKind::Ethernet;
    match crate::goodput::goodput(speed, mtu, crate::goodput::Transport::Tcp, ipv6, kind) {
        Some(g) => Ok(Some((g, source))),
        None => Err(format!("MTU {mtu} leaves no room for TCP payload: no line-rate figure")),
    }
}

/// Joins the client's and the agents' reports of one run of any kind into the result document;
/// a UDP run's summary also gets its datagram figures ([`crate::result::UdpSummary`]).
pub(crate) fn assemble(
    spec: &TestSpec,
    client_host: HostInfo,
    agents: &[AgentOutcome<'_>],
    started_unix_ms: u64,
    mut notes: Vec<String>,
    ipv6: bool,
) -> TestResult {
    let mut hosts = BTreeMap::new();
    let client_info = &client_host;
    hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host.clone(),
            config: agents.first().and_then(|a| a.client.config.clone()),
            profile: None,
        },
    );
    let mut intervals = Vec::new();
    let mut streams = Vec::new();
    let mut partial = false;
    // (forward?, sending?) -> entries, overall and per agent
    let mut all: Vec<(bool, bool, usize, Entry<'_>)> = Vec::new();
    for (ai, a) in agents.iter().enumerate() {
        if let Some(h) = a.host {
            hosts.insert(
                a.name.to_string(),
                HostRecord {
                    role: "agent".into(),
                    info: h.clone(),
                    config: a.report.and_then(|r| r.config.clone()),
                    profile: a.report.and_then(|r| r.profile.clone()),
                },
            );
        }
        partial |= a.client.partial;
        match a.report {
            Some(r) => partial |= r.partial,
            None => {
                partial = true;
                notes.push(format!("agent {}: no report received; its counts are missing", a.name));
            }
        }
        let sides: [(&str, Option<&SideReport>); 2] = [("client", Some(a.client)), ("agent", a.report)];
        for (counted_by, report) in sides {
            let Some(report) = report else { continue };
            let (owner, host) = if counted_by == "client" {
                ("client", Some(client_info))
            } else {
                (a.name, a.host)
            };
            let by_client = counted_by == "client";
            for st in &report.streams {
                let forward = st.role.flows_forward(by_client);
                let sending = st.role == Role::Send;
                all.push((
                    forward,
                    sending,
                    ai,
                    Entry {
                        owner,
                        host,
                        report,
                        stream: st,
                    },
                ));
            }
            // Each sample in the role its stream was counted in (a report's samples are of its
            // own streams: `check` refuses an agent's report that samples others).
            let roles = report.roles();
            for smp in &report.intervals {
                let Some(role) = roles.get(usize::from(smp.stream)).copied().flatten() else {
                    continue;
                };
                let forward = role.flows_forward(by_client);
                let sending = role == Role::Send;
                let secs = smp.end_ns.saturating_sub(smp.start_ns) as f64 / 1e9;
                intervals.push(IntervalRecord::Stream(StreamInterval {
                    agent: a.name.to_string(),
                    counted_by: counted_by.to_string(),
                    direction: direction_name(forward).to_string(),
                    side: if sending { "sent" } else { "received" }.to_string(),
                    sample: *smp,
                    bits_per_second: Counted::new(smp.bytes, secs).bits_per_second,
                }));
            }
            // The client's part for each agent carries the client's one timeline: keep it once.
            let timeline = if counted_by == "client" && ai > 0 {
                &[][..]
            } else {
                &report.timeline[..]
            };
            intervals.extend(timeline.iter().map(|t| {
                IntervalRecord::Host(HostIntervalRecord {
                    host: owner.to_string(),
                    sample: t.clone(),
                })
            }));
        }
        for index in 0..spec.streams_per_agent() {
            let Ends { snd, rcv, forward } = Ends::of(a, index);
            // A stream neither end reported keeps the direction the test asked for.
            let forward = forward.unwrap_or_else(|| spec.stream_flows_forward(index));
            let mut errors = ErrorCounts::default();
            for s in [snd, rcv].into_iter().flatten() {
                errors.add(&s.errors);
            }
            streams.push(StreamSummary {
                agent: a.name.to_string(),
                stream: index as u16,
                direction: direction_name(forward).to_string(),
                sent: snd.map(|s| Counted::new(s.bytes, s.seconds)),
                received: rcv.map(|s| Counted::new(s.bytes, s.seconds)),
                tcp: snd.and_then(|s| s.tcp),
                sender_socket: snd.map(|s| s.socket.clone()),
                receiver_socket: rcv.map(|s| s.socket.clone()),
                errors,
            });
        }
    }
    let pick = |f: &dyn Fn(bool, bool, usize) -> bool| -> Vec<Entry<'_>> {
        all.iter()
            .filter(|(fw, snd, ai, _)| f(*fw, *snd, *ai))
            .map(|(_, _, _, e)| Entry {
                owner: e.owner,
                host: e.host,
                report: e.report,
                stream: e.stream,
            })
            .collect()
    };
    let sent = summarise(&pick(&|_, snd, _| snd), true);
    let received = summarise(&pick(&|_, snd, _| !snd), false);
    let directions = (spec.direction() == crate::spec::Direction::Bidir).then(|| {
        let mut m = BTreeMap::new();
        for forward in [true, false] {
            m.insert(
                direction_name(forward).to_string(),
                DirectionSummary {
                    sent: summarise(&pick(&|fw, snd, _| fw == forward && snd), true),
                    received: summarise(&pick(&|fw, snd, _| fw == forward && !snd), false),
                },
            );
        }
        m
    });
    let per_agent: Vec<AgentSummary> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| AgentSummary {
            agent: a.name.to_string(),
            sent: summarise(&pick(&|_, snd, ai| ai == i && snd), true),
            received: summarise(&pick(&|_, snd, ai| ai == i && !snd), false),
        })
        .collect();
    let (mut sent, mut received, mut directions, mut per_agent) = (sent, received, directions, per_agent);
    // The senders' limit is judged against the receivers' count, the throughput's truth: a
    // sender's count also holds what still sat in its socket buffer.
    let rejudge = |snd: &mut SideSummary, rcv: &SideSummary| {
        if let Some(t) = snd.tcp.as_mut()
            && rcv.bytes > 0
        {
            tcp::judge(t, rcv.bits_per_second);
        }
    };
    rejudge(&mut sent, &received);
    for a in per_agent.iter_mut() {
        rejudge(&mut a.sent, &a.received);
    }
    if let Some(d) = directions.as_mut() {
        for side in d.values_mut() {
            rejudge(&mut side.sent, &side.received);
        }
    }
    let udp = match spec {
        TestSpec::Udp(us) => {
            let (mut u, split) = udp::summarise(us, agents, &received);
            // With a warm-up or a cool-down the figures are the measurement window's (what the
            // user cut out stays out); without, each side is rated over its own window.
            if us.own_windows() {
                udp_windows(&u, &mut sent, &mut received);
                for (a, [snd, rcv]) in per_agent.iter_mut().zip(&split.agents) {
                    snd.rate(&mut a.sent, us.payload_bytes);
                    rcv.rate(&mut a.received, us.payload_bytes);
                }
                if let Some(d) = directions.as_mut() {
                    for (name, [snd, rcv]) in ["forward", "reverse"].iter().zip(&split.directions) {
                        if let Some(d) = d.get_mut(*name) {
                            snd.rate(&mut d.sent, us.payload_bytes);
                            rcv.rate(&mut d.received, us.payload_bytes);
                        }
                    }
                }
            }
            notes.extend(udp::note_rate(us, &mut u, &sent));
            let trains = udp::train_datagrams(us, agents);
            u.loss_causes_datagrams = Some(udp::loss_causes(u.lost, trains, &sent, &received));
            Some(u)
        }
        _ => None,
    };
    let rr = match spec {
        TestSpec::Rr(r) => Some(rr::summarise(r, agents, &sent, &received)),
        _ => None,
    };
    // TCP's line rate, with the streams' path MTU and the client's interfaces in hand.
    let mut line_rate_note = None;
    if let TestSpec::Tcp(t) = spec {
        let path_mtu = streams
            .iter()
            .find_map(|s| s.tcp.map(|t| t.pmtu_bytes))
            .filter(|m| *m > 0);
        let client_config = agents.first().and_then(|a| a.client.config.as_ref());
        match tcp_line_rate(t, client_config, path_mtu, ipv6) {
            Ok(Some((g, source))) => {
                let mut sides: Vec<&mut SideSummary> = vec![&mut sent, &mut received];
                for d in directions.iter_mut().flat_map(|d| d.values_mut()) {
                    sides.extend([&mut d.sent, &mut d.received]);
                }
                for a in &mut per_agent {
                    sides.extend([&mut a.sent, &mut a.received]);
                }
                for s in sides.into_iter().filter(|s| s.bytes > 0) {
                    s.line_rate = Some(line_rate(s, &g, &source));
                }
            }
            Ok(None) => {}
            Err(note) => line_rate_note = Some(note),
        }
    }
    let mut result = TestResult {
        linerate: crate::VERSION.to_string(),
        schema: SCHEMA,
        test: spec.kind().into(),
        started_unix_ms,
        partial,
        error: None,
        options: spec.clone(),
        hosts,
        intervals,
        summary: Summary {
            sent,
            received,
            directions,
            agents: per_agent,
            streams,
            udp,
            rr,
            http: None,
            server: None,
            mix: None,
        },
        notes,
        lab: None,
        from: None,
        iperf3: None,
    };
    if let TestSpec::Tcp(t) = spec
        && let Some(m) = t.mix
    {
        result.summary.mix = tcp::mix_summary(m, t.buffer_bytes.0, &result.summary);
    }
    result.notes.extend(line_rate_note);
    let bound = cpu_bound_notes(agents, &result.summary.received);
    result.notes.extend(bound);
    result
}

/// A host whose CPUs were at least this busy over the window, all of them together, percent,
/// was CPU-bound (issue 38): its figures may be the host's limit, not the link's.
pub const CPU_BOUND_PERCENT: f64 = 95.0;

/// Names each host that was CPU-bound ([`CPU_BOUND_PERCENT`]) while the run stayed under its
/// line rate (a run at 90 % of it or more was held by its link, whatever the CPU): the client
/// and each agent, by name, with the figure (issue 38: a mesh whose hosts sat at 99-100 % CPU
/// read cells of 1.2-66 Mbit/s on 100 Mbit/s links, with no word of it).
fn cpu_bound_notes(agents: &[AgentOutcome<'_>], received: &SideSummary) -> Vec<String> {
    if received.line_rate.as_ref().is_some_and(|l| l.percent >= 90.0) {
        return Vec::new();
    }
    let client = agents
        .first()
        .and_then(|a| a.client.cpu.host_percent)
        .map(|p| ("client", p));
    let far = agents
        .iter()
        .filter_map(|a| Some((a.name, a.report?.cpu.host_percent?)));
    client
        .into_iter()
        .chain(far)
        .filter(|(_, p)| *p >= CPU_BOUND_PERCENT)
        .map(|(name, p)| {
            format!(
                "{name} was CPU-bound: {p:.0} % of its CPUs busy over the window (marked ! beside its host CPU): \
                 the host, not the link, may have set these figures"
            )
        })
        .collect()
}

/// A UDP run's send and receive sides over their own windows: the senders' first to last send
/// and the receivers' first to last arrival (UDPmon), not the measurement window, which holds
/// the wait before the first datagram and for the end markers.
fn udp_windows(u: &crate::result::UdpSummary, sent: &mut SideSummary, received: &mut SideSummary) {
    if let (Some(s), Some(bps)) = (u.send_window_seconds, u.sent_bits_per_second) {
        sent.seconds = s;
        sent.bits_per_second = bps;
    }
    if let (Some(s), Some(bps)) = (u.arrival_window_seconds, u.received_bits_per_second) {
        received.seconds = s;
        received.bits_per_second = bps;
    }
}

/// A histogram from hex of its HdrHistogram V2 encoding, as reports carry them.
fn decode(hex: &str) -> Option<Histogram<u64>> {
    crate::codec::histogram_from_hex(hex)
}
