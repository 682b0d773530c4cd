//! Assembling the result document: the client's and each agent's [`SideReport`] of one run
//! joined into one [`TestResult`]. Counts stay attributed to the side that counted them (`sent`
//! = the sender's figure, `received` = the receiver's).
//!
//! Sits above the engines (it reads their reports and constants) and below the client, which
//! calls it once a run is over. `assemble` joins a TCP, UDP or request-response run; each kind
//! adds its own figures from its module (`tcp`, `udp`, `rr`); an HTTP run has its own
//! `http::assemble`. The types they fill in are in `crate::result`.

pub mod http;
pub mod rr;
mod tcp;
mod udp;

pub use tcp::assemble_tcp;

use crate::goodput::Goodput;
use crate::metrics::cpu::CpuSplit;
use crate::metrics::host::HostInfo;
use crate::metrics::sample::{HostUsage, InterfaceUsage, InterruptRates, ProcessUsage, StackUsage};
use crate::result::{
    AgentSummary, Counted, CpuUsage, DirectionSummary, Efficiency, ErrorCounts, HostIntervalRecord, HostRecord,
    IntervalRecord, LineRate, Role, SCHEMA, SideReport, SideSummary, StreamInterval, StreamReport, StreamSummary,
    Summary, TestResult,
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

/// A stream's count within a report, with the report's owner and CPU.
struct Entry<'a> {
    owner: &'a str,
    report: &'a SideReport,
    stream: &'a StreamReport,
}

fn summarise(entries: &[Entry<'_>], sending: bool) -> SideSummary {
    let mut s = SideSummary::default();
    let mut owners: Vec<&str> = Vec::new();
    let mut reports: Vec<&SideReport> = Vec::new();
    for e in entries {
        s.bytes += e.stream.bytes;
        s.ops += e.stream.ops;
        s.streams += 1;
        s.seconds = s.seconds.max(e.stream.seconds);
        if !owners.contains(&e.owner) {
            owners.push(e.owner);
            reports.push(e.report);
        }
    }
    s.bits_per_second = Counted::new(s.bytes, s.seconds).bits_per_second;
    s.counted_by = owners.iter().map(|o| o.to_string()).collect();
    let mean = |f: fn(&CpuUsage) -> Option<f64>| {
        let v: Vec<f64> = reports.iter().filter_map(|r| f(&r.cpu)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    s.cpu.host_percent = mean(|c| c.host_percent);
    s.cpu.process_percent = mean(|c| c.process_percent);
    s.cpu.process_user_seconds = reports.iter().map(|r| r.cpu.process_user_seconds).sum();
    s.cpu.process_system_seconds = reports.iter().map(|r| r.cpu.process_system_seconds).sum();
    let hosts: Vec<(&str, &HostUsage)> = owners
        .iter()
        .zip(&reports)
        .filter_map(|(o, r)| r.host.as_ref().map(|h| (*o, h)))
        .collect();
    add_host_usage(&mut s, &hosts);
    if sending {
        s.tcp = tcp::totals(entries.iter().map(|e| e.stream), s.bits_per_second);
    }
    s
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
        bytes,
        seconds,
        bits_per_second: Counted::new(bytes, seconds).bits_per_second,
        ops,
        streams,
        counted_by: vec![owner.to_string()],
        cpu: report.cpu.clone(),
        ..Default::default()
    };
    let hosts: Vec<(&str, &HostUsage)> = report.host.iter().map(|h| (owner, h)).collect();
    add_host_usage(&mut s, &hosts);
    s
}

/// The counting hosts' samplers into a side's summary: copied for one host; for several, totals
/// summed, CPU split averaged, interfaces named HOST/IF.
fn add_host_usage(s: &mut SideSummary, hosts: &[(&str, &HostUsage)]) {
    if let [(_, h)] = hosts {
        s.cpu.split = h.cpu;
        s.cpu.per_cpu = h.per_cpu.clone();
        s.interrupts_per_second = h.interrupts_per_second.clone();
        s.softirqs_per_second = h.softirqs_per_second.clone();
        s.interfaces = h.interfaces.clone();
        s.stack = h.stack;
        s.memory = h.memory;
        s.process = h.process;
    } else if !hosts.is_empty() {
        let splits: Vec<CpuSplit> = hosts.iter().filter_map(|(_, h)| h.cpu).collect();
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
        let mut ints = InterruptRates::default();
        for (name, h) in hosts {
            if let Some(i) = &h.interrupts_per_second {
                ints.total += i.total;
                for (iface, rate) in &i.per_interface {
                    ints.per_interface.insert(format!("{name}/{iface}"), *rate);
                }
            }
            for (kind, r) in &h.softirqs_per_second {
                s.softirqs_per_second.entry(kind.clone()).or_default().total += r.total;
            }
            s.interfaces.extend(h.interfaces.iter().map(|i| InterfaceUsage {
                name: format!("{name}/{}", i.name),
                ..i.clone()
            }));
            if let Some(p) = h.process {
                let t = s.process.get_or_insert_with(ProcessUsage::default);
                t.user_seconds += p.user_seconds;
                t.system_seconds += p.system_seconds;
                t.cpu_percent += p.cpu_percent;
                t.voluntary_context_switches += p.voluntary_context_switches;
                t.involuntary_context_switches += p.involuntary_context_switches;
            }
            if let Some(st) = h.stack {
                let t = s.stack.get_or_insert_with(StackUsage::default);
                t.tcp_retransmitted_segments += st.tcp_retransmitted_segments;
                t.tcp_out_segments += st.tcp_out_segments;
                t.tcp_in_segments += st.tcp_in_segments;
                t.udp_in_datagrams += st.udp_in_datagrams;
                t.udp_out_datagrams += st.udp_out_datagrams;
                t.udp_receive_buffer_errors += st.udp_receive_buffer_errors;
                t.udp_send_buffer_errors += st.udp_send_buffer_errors;
                t.softnet_processed += st.softnet_processed;
                t.softnet_dropped += st.softnet_dropped;
                t.softnet_squeezed += st.softnet_squeezed;
            }
        }
        s.interrupts_per_second = Some(ints);
    }
    s.efficiency = efficiency(s.bytes, s.bits_per_second, hosts);
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
    }
}

/// Sets every side's line-rate figure (totals, directions, agents) against `g`.
pub(crate) fn add_line_rate(r: &mut TestResult, g: &Goodput, source: &str) {
    let mut sides: Vec<&mut SideSummary> = vec![&mut r.summary.sent, &mut r.summary.received];
    if let Some(d) = r.summary.directions.as_mut() {
        for v in d.values_mut() {
            sides.push(&mut v.sent);
            sides.push(&mut v.received);
        }
    }
    for a in &mut r.summary.agents {
        sides.push(&mut a.sent);
        sides.push(&mut a.received);
    }
    for s in sides {
        if s.bytes > 0 {
            s.line_rate = Some(line_rate(s, g, source));
        }
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
) -> TestResult {
    let mut hosts = BTreeMap::new();
    hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host,
            config: agents.first().and_then(|a| a.client.config.clone()),
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
            let owner = if counted_by == "client" { "client" } else { a.name };
            for st in &report.streams {
                let forward = spec.stream_flows_forward(usize::from(st.stream));
                let sending = st.role == Role::Send;
                all.push((
                    forward,
                    sending,
                    ai,
                    Entry {
                        owner,
                        report,
                        stream: st,
                    },
                ));
            }
            for smp in &report.intervals {
                let forward = spec.stream_flows_forward(usize::from(smp.stream));
                let client_sends = forward;
                let sending = (counted_by == "client") == client_sends;
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
            let forward = spec.stream_flows_forward(index);
            let find = |r: Option<&'_ SideReport>, role: Role| {
                r.and_then(|r| {
                    r.streams
                        .iter()
                        .find(|s| usize::from(s.stream) == index && s.role == role)
                        .cloned()
                })
            };
            let (client_role, agent_role) = if forward {
                (Role::Send, Role::Receive)
            } else {
                (Role::Receive, Role::Send)
            };
            let c = find(Some(a.client), client_role);
            let g = find(a.report, agent_role);
            let (snd, rcv) = if forward { (c, g) } else { (g, c) };
            let mut errors = ErrorCounts::default();
            for s in [&snd, &rcv].into_iter().flatten() {
                errors.add(&s.errors);
            }
            streams.push(StreamSummary {
                agent: a.name.to_string(),
                stream: index as u16,
                direction: direction_name(forward).to_string(),
                sent: snd.as_ref().map(|s| Counted::new(s.bytes, s.seconds)),
                received: rcv.as_ref().map(|s| Counted::new(s.bytes, s.seconds)),
                tcp: snd.as_ref().and_then(|s| s.tcp),
                sender_socket: snd.map(|s| s.socket),
                receiver_socket: rcv.map(|s| s.socket),
                errors,
            });
        }
    }
    let pick = |f: &dyn Fn(bool, bool, usize) -> bool| -> Vec<Entry<'_>> {
        all.iter()
            .filter(|(fw, snd, ai, _)| f(*fw, *snd, *ai))
            .map(|(_, _, _, e)| Entry {
                owner: e.owner,
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
    let per_agent = agents
        .iter()
        .enumerate()
        .map(|(i, a)| AgentSummary {
            agent: a.name.to_string(),
            sent: summarise(&pick(&|_, snd, ai| ai == i && snd), true),
            received: summarise(&pick(&|_, snd, ai| ai == i && !snd), false),
        })
        .collect();
    let udp = match spec {
        TestSpec::Udp(u) => Some(udp::summarise(u, agents, &received)),
        _ => None,
    };
    let rr = match spec {
        TestSpec::Rr(r) => Some(rr::summarise(r, agents, &sent, &received)),
        _ => None,
    };
    TestResult {
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
        },
        notes,
        lab: None,
    }
}

/// A histogram from hex of its HdrHistogram V2 encoding, as reports carry them.
fn decode(hex: &str) -> Option<Histogram<u64>> {
    crate::codec::histogram_from_hex(hex)
}
