//! Assembling the result document: the client's and each agent's [`SideReport`] of one run
//! joined into one [`TestResult`]. Counts stay attributed to the side that counted them (`sent`
//! = the sender's figure, `received` = the receiver's).
//!
//! Sits above the engines (it reads their reports and constants) and below the client, which
//! calls it once a run is over. `assemble` (in `join`, by phase) joins a TCP, UDP or
//! request-response run; each kind adds its own figures from its module (`tcp`, `udp`, `rr`);
//! an HTTP run has its own `http::assemble`. The types they fill in are in `crate::result`.

pub(crate) mod check;
pub use check::escape_controls;
pub mod http;
pub mod iperf3;
mod join;
pub mod latency;
pub mod relayed;
pub mod rpm;
pub mod rr;
mod tcp;
mod udp;

pub(crate) use join::assemble;
pub use tcp::assemble_tcp;

use crate::goodput::Goodput;
use crate::metrics::cpu::CpuSplit;
use crate::metrics::host::HostInfo;
use crate::metrics::sample::{HostUsage, InterfaceUsage, InterruptRates, ProcessUsage, StackUsage};
use crate::result::{Counted, Efficiency, LineRate, SideReport, SideSummary, StreamReport, TestResult};
use hdrhistogram::Histogram;

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
#[derive(Clone, Copy)]
struct Entry<'a> {
    owner: &'a str,
    /// The owner's host identity (boot id, network namespace); None when unknown.
    host: Option<&'a HostInfo>,
    report: &'a SideReport,
    stream: &'a StreamReport,
}

/// One counting end's host samplers, with what identifies its host (two agents on one
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

/// The counting ends' samplers into a side's summary, each host counted once:
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
/// line rate is taken again as tbf counts packets ([`crate::goodput::LinkKind`]).
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

pub use linerate_wire::result::CPU_BOUND_PERCENT;

/// Names each host that was CPU-bound ([`CPU_BOUND_PERCENT`]) while the run stayed under its
/// line rate (a run at 90 % of it or more was held by its link, whatever the CPU): the client
/// and each agent, by name, with the figure (a mesh whose hosts sat at 99-100 % CPU
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

/// A histogram from hex of its HdrHistogram V2 encoding, as reports carry them.
fn decode(hex: &str) -> Option<Histogram<u64>> {
    crate::codec::histogram_from_hex(hex)
}
