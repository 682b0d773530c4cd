//! Joining a TCP, UDP or request-response run: the client's and each agent's reports into the
//! result document, by phase: the hosts and every counted stream gathered ([`gather`]), the
//! sides added up from them ([`sides`]), the kind's own figures ([`udp_figures`], rr's), TCP's
//! line rate ([`tcp_line_rates`]), then the document.

use super::{
    AgentOutcome, Ends, Entry, cpu_bound_notes, direction_name, line_rate, rr, summarise, tcp, tcp_line_rate, udp,
};
use crate::metrics::host::HostInfo;
use crate::result::{
    AgentSummary, Counted, DirectionSummary, ErrorCounts, HostIntervalRecord, HostRecord, IntervalRecord, Role, SCHEMA,
    SideReport, SideSummary, StreamInterval, StreamSummary, Summary, TestResult, UdpSummary,
};
use crate::spec::{TcpSpec, TestSpec, UdpSpec};
use std::collections::BTreeMap;

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
    let Gathered {
        hosts,
        intervals,
        streams,
        partial,
        counted,
    } = gather(spec, &client_host, agents, &mut notes);
    let mut sides = sides(spec, agents, &counted);
    let udp = match spec {
        TestSpec::Udp(us) => Some(udp_figures(us, agents, &mut sides, &mut notes)),
        _ => None,
    };
    let rr = match spec {
        TestSpec::Rr(r) => Some(rr::summarise(r, agents, &sides.sent, &sides.received)),
        _ => None,
    };
    let line_rate_note = match spec {
        TestSpec::Tcp(t) => tcp_line_rates(t, agents, &streams, &mut sides, ipv6),
        _ => None,
    };
    let Sides {
        sent,
        received,
        directions,
        per_agent,
    } = sides;
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
        latency: None,
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

/// A stream's count as one end reported it: whether it flowed forward, whether that end sent
/// it, the agent's index, and the count.
type Counting<'a> = (bool, bool, usize, Entry<'a>);

/// What the reports hold, gathered: the hosts, every record, each stream's two ends, whether
/// the run is partial, and every count by where it was counted.
struct Gathered<'a> {
    hosts: BTreeMap<String, HostRecord>,
    intervals: Vec<IntervalRecord>,
    streams: Vec<StreamSummary>,
    partial: bool,
    counted: Vec<Counting<'a>>,
}

/// Each agent's host and reports gathered; a note for each agent whose report never came.
fn gather<'a>(
    spec: &TestSpec,
    client_host: &'a HostInfo,
    agents: &[AgentOutcome<'a>],
    notes: &mut Vec<String>,
) -> Gathered<'a> {
    let mut g = Gathered {
        hosts: BTreeMap::new(),
        intervals: Vec::new(),
        streams: Vec::new(),
        partial: false,
        counted: Vec::new(),
    };
    g.hosts.insert(
        "client".to_string(),
        HostRecord {
            role: "client".into(),
            info: client_host.clone(),
            config: agents.first().and_then(|a| a.client.config.clone()),
            profile: None,
        },
    );
    for (ai, a) in agents.iter().enumerate() {
        if let Some(h) = a.host {
            g.hosts.insert(
                a.name.to_string(),
                HostRecord {
                    role: "agent".into(),
                    info: h.clone(),
                    config: a.report.and_then(|r| r.config.clone()),
                    profile: a.report.and_then(|r| r.profile.clone()),
                },
            );
        }
        g.partial |= a.client.partial;
        match a.report {
            Some(r) => g.partial |= r.partial,
            None => {
                g.partial = true;
                notes.push(format!("agent {}: no report received; its counts are missing", a.name));
            }
        }
        g.add_report(ai, a, true, client_host, a.client);
        if let Some(r) = a.report {
            g.add_report(ai, a, false, client_host, r);
        }
        g.streams
            .extend((0..spec.streams_per_agent()).map(|index| stream_summary(spec, a, index)));
    }
    g
}

impl<'a> Gathered<'a> {
    /// One end's report of agent `ai`'s streams (the client's part, `by_client`, or the
    /// agent's own): its streams' counts, its samples and its host's timeline.
    fn add_report(
        &mut self,
        ai: usize,
        a: &AgentOutcome<'a>,
        by_client: bool,
        client_host: &'a HostInfo,
        report: &'a SideReport,
    ) {
        let (owner, host) = if by_client {
            ("client", Some(client_host))
        } else {
            (a.name, a.host)
        };
        for st in &report.streams {
            let entry = Entry {
                owner,
                host,
                report,
                stream: st,
            };
            self.counted
                .push((st.role.flows_forward(by_client), st.role == Role::Send, ai, entry));
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
            self.intervals.push(IntervalRecord::Stream(StreamInterval {
                agent: a.name.to_string(),
                counted_by: if by_client { "client" } else { "agent" }.to_string(),
                direction: direction_name(forward).to_string(),
                side: if sending { "sent" } else { "received" }.to_string(),
                sample: *smp,
                bits_per_second: Counted::new(smp.bytes, secs).bits_per_second,
            }));
        }
        // The client's part for each agent carries the client's one timeline: keep it once.
        let timeline = if by_client && ai > 0 {
            &[][..]
        } else {
            &report.timeline[..]
        };
        self.intervals.extend(timeline.iter().map(|t| {
            IntervalRecord::Host(HostIntervalRecord {
                host: owner.to_string(),
                sample: t.clone(),
            })
        }));
    }
}

/// Stream `index` of agent `a` as its two ends counted it.
fn stream_summary(spec: &TestSpec, a: &AgentOutcome<'_>, index: usize) -> StreamSummary {
    let Ends { snd, rcv, forward } = Ends::of(a, index);
    // A stream neither end reported keeps the direction the test asked for.
    let forward = forward.unwrap_or_else(|| spec.stream_flows_forward(index));
    let mut errors = ErrorCounts::default();
    for s in [snd, rcv].into_iter().flatten() {
        errors.add(&s.errors);
    }
    StreamSummary {
        agent: a.name.to_string(),
        stream: index as u16,
        direction: direction_name(forward).to_string(),
        sent: snd.map(|s| Counted::new(s.bytes, s.seconds)),
        received: rcv.map(|s| Counted::new(s.bytes, s.seconds)),
        tcp: snd.and_then(|s| s.tcp),
        sender_socket: snd.map(|s| s.socket.clone()),
        receiver_socket: rcv.map(|s| s.socket.clone()),
        errors,
    }
}

/// The run's sides: overall, per direction (bidir), per agent.
struct Sides {
    sent: SideSummary,
    received: SideSummary,
    directions: Option<BTreeMap<String, DirectionSummary>>,
    per_agent: Vec<AgentSummary>,
}

impl Sides {
    /// Every side, sent and received alike.
    fn all_mut(&mut self) -> Vec<&mut SideSummary> {
        let mut sides: Vec<&mut SideSummary> = vec![&mut self.sent, &mut self.received];
        for d in self.directions.iter_mut().flat_map(|d| d.values_mut()) {
            sides.extend([&mut d.sent, &mut d.received]);
        }
        for a in &mut self.per_agent {
            sides.extend([&mut a.sent, &mut a.received]);
        }
        sides
    }
}

/// The counts added up into the sides, each sender's limit judged against its receivers.
fn sides(spec: &TestSpec, agents: &[AgentOutcome<'_>], counted: &[Counting<'_>]) -> Sides {
    let pick = |f: &dyn Fn(bool, bool, usize) -> bool| -> Vec<Entry<'_>> {
        counted
            .iter()
            .filter(|(fw, snd, ai, _)| f(*fw, *snd, *ai))
            .map(|(_, _, _, e)| *e)
            .collect()
    };
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
    let mut s = Sides {
        sent: summarise(&pick(&|_, snd, _| snd), true),
        received: summarise(&pick(&|_, snd, _| !snd), false),
        directions,
        per_agent: agents
            .iter()
            .enumerate()
            .map(|(i, a)| AgentSummary {
                agent: a.name.to_string(),
                sent: summarise(&pick(&|_, snd, ai| ai == i && snd), true),
                received: summarise(&pick(&|_, snd, ai| ai == i && !snd), false),
            })
            .collect(),
    };
    // The senders' limit is judged against the receivers' count, the throughput's truth: a
    // sender's count also holds what still sat in its socket buffer.
    let rejudge = |snd: &mut SideSummary, rcv: &SideSummary| {
        if let Some(t) = snd.tcp.as_mut()
            && rcv.bytes > 0
        {
            tcp::judge(t, rcv.bits_per_second);
        }
    };
    rejudge(&mut s.sent, &s.received);
    for a in s.per_agent.iter_mut() {
        rejudge(&mut a.sent, &a.received);
    }
    if let Some(d) = s.directions.as_mut() {
        for side in d.values_mut() {
            rejudge(&mut side.sent, &side.received);
        }
    }
    s
}

/// A UDP run's datagram figures, and its sides rated over their own windows when nothing was
/// cut out of the run.
fn udp_figures(us: &UdpSpec, agents: &[AgentOutcome<'_>], s: &mut Sides, notes: &mut Vec<String>) -> UdpSummary {
    let (mut u, split) = udp::summarise(us, agents, &s.received);
    // With a warm-up or a cool-down the figures are the measurement window's (what the
    // user cut out stays out); without, each side is rated over its own window.
    if us.own_windows() {
        udp_windows(&u, &mut s.sent, &mut s.received);
        for (a, [snd, rcv]) in s.per_agent.iter_mut().zip(&split.agents) {
            snd.rate(&mut a.sent, us.payload_bytes);
            rcv.rate(&mut a.received, us.payload_bytes);
        }
        if let Some(d) = s.directions.as_mut() {
            for (name, [snd, rcv]) in ["forward", "reverse"].iter().zip(&split.directions) {
                if let Some(d) = d.get_mut(*name) {
                    snd.rate(&mut d.sent, us.payload_bytes);
                    rcv.rate(&mut d.received, us.payload_bytes);
                }
            }
        }
    }
    notes.extend(udp::note_rate(us, &mut u, &s.sent));
    let trains = udp::train_datagrams(us, agents);
    u.loss_causes_datagrams = Some(udp::loss_causes(u.lost, trains, &s.sent, &s.received));
    u
}

/// A UDP run's send and receive sides over their own windows: the senders' first to last send
/// and the receivers' first to last arrival (UDPmon), not the measurement window, which holds
/// the wait before the first datagram and for the end markers.
fn udp_windows(u: &UdpSummary, sent: &mut SideSummary, received: &mut SideSummary) {
    if let (Some(s), Some(bps)) = (u.send_window_seconds, u.sent_bits_per_second) {
        sent.seconds = s;
        sent.bits_per_second = bps;
    }
    if let (Some(s), Some(bps)) = (u.arrival_window_seconds, u.received_bits_per_second) {
        received.seconds = s;
        received.bits_per_second = bps;
    }
}

/// TCP's line rate on every side that counted bytes, with the streams' path MTU and the
/// client's interfaces in hand; the note when there is none to give.
fn tcp_line_rates(
    t: &TcpSpec,
    agents: &[AgentOutcome<'_>],
    streams: &[StreamSummary],
    s: &mut Sides,
    ipv6: bool,
) -> Option<String> {
    let path_mtu = streams
        .iter()
        .find_map(|s| s.tcp.map(|t| t.pmtu_bytes))
        .filter(|m| *m > 0);
    let client_config = agents.first().and_then(|a| a.client.config.as_ref());
    match tcp_line_rate(t, client_config, path_mtu, ipv6) {
        Ok(Some((g, source))) => {
            for side in s.all_mut().into_iter().filter(|s| s.bytes > 0) {
                side.line_rate = Some(line_rate(side, &g, &source));
            }
            None
        }
        Ok(None) => None,
        Err(note) => Some(note),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::sample::HostInterval;
    use crate::result::{IntervalSample, StreamReport};
    use crate::spec::TcpSpec;

    /// One end's report of stream 0 in `role`, 1000 bytes in one sample, one host sample.
    fn side(role: Role) -> SideReport {
        SideReport {
            streams: vec![StreamReport {
                stream: 0,
                role,
                bytes: 1000,
                ops: 1,
                seconds: 1.0,
                total_bytes: 1000,
                socket: Default::default(),
                tcp: None,
                errors: ErrorCounts::default(),
                end: crate::result::StreamEnd::Eof,
                udp_send: None,
                udp_receive: None,
                rr: None,
            }],
            intervals: vec![IntervalSample {
                stream: 0,
                start_ns: 0,
                end_ns: 1_000_000_000,
                bytes: 1000,
                ops: 1,
                tcp: None,
            }],
            timeline: vec![HostInterval::default()],
            ..SideReport::default()
        }
    }

    #[test]
    fn gathering_keeps_the_clients_timeline_once_and_notes_a_missing_report() {
        let spec = TestSpec::Tcp(TcpSpec::new());
        let (client, agent) = (side(Role::Send), side(Role::Receive));
        let host = HostInfo::default();
        let agents = [
            AgentOutcome {
                name: "a:1",
                host: None,
                report: Some(&agent),
                client: &client,
            },
            AgentOutcome {
                name: "b:1",
                host: None,
                report: None,
                client: &client,
            },
        ];
        let mut notes = Vec::new();
        let g = gather(&spec, &host, &agents, &mut notes);
        assert!(g.partial, "b's report never came");
        assert_eq!(notes, ["agent b:1: no report received; its counts are missing"]);
        let hosts: Vec<&str> = g
            .intervals
            .iter()
            .filter_map(|r| match r {
                IntervalRecord::Host(h) => Some(h.host.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(hosts, ["client", "a:1"], "the client's timeline once, then a's");
        let samples: Vec<(&str, &str, &str)> = g
            .intervals
            .iter()
            .filter_map(|r| match r {
                IntervalRecord::Stream(s) => Some((s.agent.as_str(), s.counted_by.as_str(), s.side.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            samples,
            [
                ("a:1", "client", "sent"),
                ("a:1", "agent", "received"),
                ("b:1", "client", "sent")
            ]
        );
        assert_eq!(g.counted.len(), 3);
        assert_eq!(g.streams.len(), 2, "one stream per agent, reported or not");
        let s = sides(&spec, &agents, &g.counted);
        assert_eq!((s.sent.bytes, s.received.bytes), (2000, 1000));
        assert_eq!(s.per_agent[1].received.bytes, 0, "nothing counted for b's receiver");
    }
}
