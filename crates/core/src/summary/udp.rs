//! A UDP run's figures over all its streams: datagrams sent and received, loss against the
//! senders' counts, order, arrival spacing and one-way delay from the receivers' histograms.

use super::{AgentOutcome, Ends, decode};
use crate::result::RATE_SHORT_PERCENT;
use crate::result::{
    Bin, DelayFigures, LossCauses, RateAchieved, ReceiverFigures, SendSpacingFigures, SideSummary, SpacingFigures,
    StreamLoss, StreamProfile, UdpReceiveReport, UdpSendReport, UdpSummary,
};
use crate::spec::UdpSpec;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Each agent's and each direction's send and arrival windows, `[send, arrival]`, to rate the
/// agents' and directions' sides as the totals are.
#[derive(Default)]
pub(crate) struct SplitWindows<'a> {
    pub agents: Vec<[Windows<'a>; 2]>,
    /// Forward, then reverse.
    pub directions: [[Windows<'a>; 2]; 2],
}

/// Joins every stream's sender and receiver reports.
pub(crate) fn summarise<'a>(
    spec: &UdpSpec,
    agents: &[AgentOutcome<'a>],
    received: &SideSummary,
) -> (UdpSummary, SplitWindows<'a>) {
    let mut j = Joined::new(spec);
    for (ai, a) in agents.iter().enumerate() {
        j.add_agent(ai, a);
    }
    j.finish(received)
}

/// The streams' reports as they are joined, before the figures are made of them.
struct Joined<'s, 'a> {
    spec: &'s UdpSpec,
    u: UdpSummary,
    split: SplitWindows<'a>,
    spacing: Option<Histogram<u64>>,
    delay: Option<Histogram<u64>>,
    delays_relative: bool,
    bins: BTreeMap<u64, u64>,
    overflow: u64,
    jitter: Vec<f64>,
    stamps: Vec<String>,
    sends: Vec<&'a UdpSendReport>,
    // Each end's first and last send or arrival, on that end's own clock: windows are taken per
    // clock, since two hosts' realtime clocks may differ by any offset.
    send_windows: Windows<'a>,
    arrival_windows: Windows<'a>,
    /// Datagrams the receivers were sent: with multicast each receiver is sent the same ones.
    expected: u64,
}

/// One agent's receiving figures as they are joined: the datagrams its receivers were sent.
struct Receiver {
    figures: ReceiverFigures,
    expected: u64,
}

impl<'s, 'a> Joined<'s, 'a> {
    fn new(spec: &'s UdpSpec) -> Self {
        Joined {
            spec,
            u: UdpSummary::default(),
            split: SplitWindows::default(),
            spacing: None,
            delay: None,
            delays_relative: !spec.synced_clocks,
            bins: BTreeMap::new(),
            overflow: 0,
            jitter: Vec::new(),
            stamps: Vec::new(),
            sends: Vec::new(),
            send_windows: Windows::default(),
            arrival_windows: Windows::default(),
            expected: 0,
        }
    }

    /// Agent `ai`'s streams: each one's windows, its sender's count, its receiver's figures.
    fn add_agent(&mut self, ai: usize, a: &AgentOutcome<'a>) {
        let spec = self.spec;
        let mut mine = Receiver {
            figures: ReceiverFigures {
                agent: a.name.to_string(),
                ..Default::default()
            },
            expected: 0,
        };
        let mut agent_windows: [Windows<'a>; 2] = Default::default();
        for index in 0..spec.streams_per_agent() {
            let ends = Ends::of(a, index);
            let Some(forward) = ends.forward else { continue };
            let snd = ends.snd.and_then(|s| s.udp_send.as_ref());
            let rcv: Option<&UdpReceiveReport> = ends.rcv.and_then(|s| s.udp_receive.as_ref());
            let (snd_owner, rcv_owner) = if forward {
                ("client", a.name)
            } else {
                (a.name, "client")
            };
            let dir = usize::from(!forward);
            if let Some(s) = snd {
                let w = (s.first_send_unix_ns, s.last_send_unix_ns, s.datagrams);
                agent_windows[0].add(snd_owner, w.0, w.1, w.2);
                self.split.directions[dir][0].add(snd_owner, w.0, w.1, w.2);
            }
            if let Some(r) = rcv {
                let w = (r.first_arrival_unix_ns, r.last_arrival_unix_ns, r.datagrams);
                agent_windows[1].add(rcv_owner, w.0, w.1, w.2);
                self.split.directions[dir][1].add(rcv_owner, w.0, w.1, w.2);
            }
            if let Some(s) = snd
                && (spec.multicast.is_none() || ai == 0)
            {
                let u = &mut self.u;
                u.datagrams_sent += s.datagrams;
                u.first_send_unix_ns = earliest(u.first_send_unix_ns, s.first_send_unix_ns);
                u.last_send_unix_ns = u.last_send_unix_ns.max(s.last_send_unix_ns);
                self.send_windows
                    .add(snd_owner, s.first_send_unix_ns, s.last_send_unix_ns, s.datagrams);
                self.sends.push(s);
            }
            let Some(r) = rcv else { continue };
            mine.figures.counted_by = if forward { a.name.to_string() } else { "client".into() };
            self.add_receive(a.name, index, snd, r, rcv_owner, &mut mine);
        }
        self.split.agents.push(agent_windows);
        if mine.expected > 0 {
            mine.figures.loss_percent = 100.0 * mine.figures.lost as f64 / mine.expected as f64;
            self.expected += mine.expected;
            self.u.receivers.push(mine.figures);
        }
    }

    /// Stream `index` of agent `agent` as its receiver (counted by `rcv_owner`) saw it, against
    /// its sender's count when that came.
    fn add_receive(
        &mut self,
        agent: &str,
        index: usize,
        snd: Option<&UdpSendReport>,
        r: &UdpReceiveReport,
        rcv_owner: &'a str,
        mine: &mut Receiver,
    ) {
        let u = &mut self.u;
        u.datagrams_received += r.datagrams;
        // The sender's own count is the truth for what was sent.
        let lost = match snd {
            Some(s) => s.datagrams.saturating_sub(r.datagrams),
            None => r.lost,
        };
        mine.expected += snd.map_or(r.datagrams + r.lost, |s| s.datagrams);
        let m = &mut mine.figures;
        m.datagrams_received += r.datagrams;
        m.lost += lost;
        m.out_of_order += r.out_of_order;
        m.duplicates += r.duplicates;
        u.lost += lost;
        u.out_of_order += r.out_of_order;
        u.duplicates += r.duplicates;
        u.out_of_range += r.out_of_range;
        self.jitter.push(r.jitter_us);
        if !self.stamps.contains(&r.timestamps) {
            self.stamps.push(r.timestamps.clone());
        }
        u.first_arrival_unix_ns = earliest(u.first_arrival_unix_ns, r.first_arrival_unix_ns);
        u.last_arrival_unix_ns = u.last_arrival_unix_ns.max(r.last_arrival_unix_ns);
        self.arrival_windows
            .add(rcv_owner, r.first_arrival_unix_ns, r.last_arrival_unix_ns, r.datagrams);
        if let Some(p) = &r.along_sequence {
            u.along_sequence.push(StreamProfile {
                agent: agent.to_string(),
                stream: index as u16,
                profile: p.clone(),
            });
        }
        if lost > 0 {
            u.loss_ranges.push(StreamLoss {
                agent: agent.to_string(),
                stream: index as u16,
                lost,
                ranges: r.loss_ranges.clone(),
                range_count: r.loss_range_count,
                picture: r.loss_picture.clone(),
            });
        }
        if let Some(h) = decode(&r.spacing_histogram) {
            match &mut self.spacing {
                Some(all) => {
                    let _ = all.add(&h);
                }
                None => self.spacing = Some(h),
            }
        }
        self.add_delay(r);
        for [from, count] in &r.bins {
            *self.bins.entry(*from).or_default() += count;
        }
        self.overflow += r.bin_overflow;
    }

    /// A receiver's one-way delays. Relative: each stream above its own minimum (the ends'
    /// clocks may differ by any offset). Synchronised: the absolute delay.
    fn add_delay(&mut self, r: &UdpReceiveReport) {
        let Some(h) = decode(&r.delay_histogram).filter(|h| !h.is_empty()) else {
            return;
        };
        let synced = self.spec.synced_clocks;
        let shift = if synced && r.delay_min_ns >= 0 {
            r.delay_min_ns
        } else {
            0
        };
        if synced && r.delay_min_ns < 0 {
            self.delays_relative = true;
        }
        let mut shifted = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        for v in h.iter_recorded() {
            let x = (v.value_iterated_to() as i64 + shift).clamp(1, 60_000_000_000) as u64;
            let _ = shifted.record_n(x, v.count_at_value());
        }
        match &mut self.delay {
            Some(all) => {
                let _ = all.add(&shifted);
            }
            None => self.delay = Some(shifted),
        }
    }

    /// The figures of every stream joined: loss, each end's window and rate, spacing, delay and
    /// the send rate.
    fn finish(self, received: &SideSummary) -> (UdpSummary, SplitWindows<'a>) {
        let spec = self.spec;
        let mut u = self.u;
        if self.expected > 0 {
            u.loss_percent = 100.0 * u.lost as f64 / self.expected as f64;
        }
        // Each end's rate over its own window (UDPmon): the sender's from its first to its last
        // send, the receiver's from its first to its last arrival. The measurement window would
        // include the wait for the end markers and the time before the first datagram arrived.
        let size = u64::from(spec.payload_bytes);
        u.send_window_seconds = self.send_windows.longest_seconds();
        u.sent_bits_per_second = u.send_window_seconds.map(|s| (u.datagrams_sent * size * 8) as f64 / s);
        u.arrival_window_seconds = self.arrival_windows.longest_seconds();
        u.received_bits_per_second = u
            .arrival_window_seconds
            .map(|s| (u.datagrams_received * size * 8) as f64 / s);
        match u.arrival_window_seconds {
            Some(s) => u.packets_per_second = u.datagrams_received as f64 / s,
            None if received.seconds > 0.0 => u.packets_per_second = received.ops as f64 / received.seconds,
            None => {}
        }
        if !u.receivers.is_empty() {
            u.received_per_receiver_mean_datagrams = Some(u.datagrams_received as f64 / u.receivers.len() as f64);
        }
        if !self.jitter.is_empty() {
            u.jitter_us = self.jitter.iter().sum::<f64>() / self.jitter.len() as f64;
        }
        u.timestamps = self.stamps.join(", ");
        u.arrival_spacing_us = self.spacing.filter(|h| !h.is_empty()).map(|h| SpacingFigures {
            mean: h.mean() / 1e3,
            stddev: h.stdev() / 1e3,
            p50: h.value_at_quantile(0.5) as f64 / 1e3,
            p99: h.value_at_quantile(0.99) as f64 / 1e3,
            min: h.min() as f64 / 1e3,
            max: h.max() as f64 / 1e3,
        });
        u.arrival_spacing_histogram = spacing_bins(self.bins, self.overflow, f64::from(spec.bin_us));
        if let Some(h) = self.delay.filter(|h| !h.is_empty()) {
            let (figures, bins) = delay_figures(&h, self.delays_relative);
            u.one_way_delay_us = Some(figures);
            u.one_way_delay_histogram = bins;
        }
        u.send_spacing_us = send_spacing(spec, &self.sends);
        u.send_rate = rate_achieved(spec, &u, &self.sends);
        (u, self.split)
    }
}

/// The receivers' arrival spacing bins (`bin` µs wide), those past the last bin in one open bin.
fn spacing_bins(bins: BTreeMap<u64, u64>, overflow: u64, bin: f64) -> Vec<Bin> {
    let mut out: Vec<Bin> = bins
        .into_iter()
        .map(|(from, count)| Bin {
            from_us: from as f64,
            to_us: from as f64 + bin,
            count,
        })
        .collect();
    if overflow > 0 {
        let from = crate::engine::udp::MAX_BINS as f64 * bin;
        out.push(Bin {
            from_us: from,
            to_us: f64::INFINITY,
            count: overflow,
        });
    }
    out
}

/// The one-way delay's figures and a 51-bin histogram of it, µs, from the joined delays (ns;
/// `relative` ones were shifted to start at 1 ns, so their minimum is 0).
fn delay_figures(h: &Histogram<u64>, relative: bool) -> (DelayFigures, Vec<Bin>) {
    let off = if relative { 1.0 } else { 0.0 };
    let us = |v: u64| (v as f64 - off) / 1e3;
    let figures = DelayFigures {
        min: us(h.min()),
        mean: (h.mean() - off) / 1e3,
        p50: us(h.value_at_quantile(0.5)),
        p90: us(h.value_at_quantile(0.9)),
        p99: us(h.value_at_quantile(0.99)),
        max: us(h.max()),
        relative,
    };
    let (lo, hi) = (h.min(), h.max());
    let width = ((hi - lo) / 50).max(1);
    let mut counts = vec![0u64; 51];
    for v in h.iter_recorded() {
        let i = ((v.value_iterated_to().clamp(lo, hi) - lo) / width) as usize;
        counts[i.min(50)] += v.count_at_value();
    }
    let bins = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| Bin {
            from_us: us(lo + i as u64 * width),
            to_us: us(lo + (i as u64 + 1) * width),
            count: *c,
        })
        .collect();
    (figures, bins)
}

/// Spacing as the senders timed it: a sender whose report has no send times (an iperf3
/// peer's, made from its results) timed nothing, so it adds no zeros.
fn send_spacing(spec: &UdpSpec, sends: &[&UdpSendReport]) -> Option<SendSpacingFigures> {
    let timed: Vec<_> = sends.iter().filter(|s| s.first_send_unix_ns.is_some()).collect();
    if timed.is_empty() {
        return None;
    }
    let n = timed.len() as f64;
    Some(SendSpacingFigures {
        requested: spec.gap_ns as f64 / 1e3,
        mean: timed.iter().map(|s| s.spacing.mean_us).sum::<f64>() / n,
        stddev: timed.iter().map(|s| s.spacing.stddev_us).sum::<f64>() / n,
        late_percent: timed.iter().map(|s| s.spacing.late_percent).sum::<f64>() / n,
    })
}

/// A paced run's send rate against the rate asked: the senders' rate over their window, the
/// share of datagrams they sent late, and the sends the kernel made them retry. The sending
/// host's SndbufErrors come later, with the side's counters ([`note_rate`]).
fn rate_achieved(spec: &UdpSpec, u: &UdpSummary, sends: &[&UdpSendReport]) -> Option<RateAchieved> {
    let per_stream = spec.stream_bits_per_second()?;
    let sent = u.sent_bits_per_second?;
    let asked = per_stream * sends.len() as f64;
    (asked > 0.0).then(|| RateAchieved {
        asked_bits_per_second: asked,
        sent_bits_per_second: sent,
        percent: 100.0 * sent / asked,
        late_percent: u.send_spacing_us.map_or(0.0, |s| s.late_percent),
        full_queue_retries: sends.iter().map(|s| s.full_queue_retries).sum(),
        send_buffer_errors: None,
        streams: sends.len() as u64,
        sender_busy_cores: None,
    })
}

/// A sender busy this share of a core per stream is CPU-bound.
const CPU_BOUND_CORES_PER_STREAM: f64 = 0.9;

/// Adds the sending ends' SndbufErrors and CPU to the rate figure and, when the rate asked was
/// not reached, returns a note saying by how much and what the counters say held it back. Not
/// a failure: the run measured what the path and the senders allowed.
pub(crate) fn note_rate(spec: &UdpSpec, u: &mut UdpSummary, sent: &SideSummary) -> Option<String> {
    let window = u.send_window_seconds.filter(|s| *s > 0.0);
    let r = u.send_rate.as_mut()?;
    r.send_buffer_errors = sent.stack.map(|s| s.udp_send_buffer_errors);
    let cpu_seconds = sent.cpu.process_user_seconds + sent.cpu.process_system_seconds;
    r.sender_busy_cores = window
        .filter(|_| spec.direction != crate::spec::Direction::Bidir && cpu_seconds > 0.0)
        .map(|w| cpu_seconds / w);
    if r.percent >= RATE_SHORT_PERCENT {
        return None;
    }
    let mut why = vec![format!("{:.2} % of datagrams left late", r.late_percent)];
    if r.full_queue_retries > 0 {
        why.push(format!(
            "the kernel refused {} sends with a full queue",
            r.full_queue_retries
        ));
    }
    if let Some(n) = r.send_buffer_errors.filter(|n| *n > 0) {
        why.push(format!(
            "the sender's stack could not queue {n} datagrams (UDP SndbufErrors)"
        ));
    }
    if let Some(cores) = r
        .sender_busy_cores
        .filter(|c| *c >= CPU_BOUND_CORES_PER_STREAM * r.streams as f64)
    {
        why.push(format!(
            "the senders were CPU-bound ({cores:.2} cores busy for {} stream{})",
            r.streams,
            if r.streams == 1 { "" } else { "s" }
        ));
    }
    Some(format!(
        "the rate asked was not reached: sent {:.1} of {:.1} Mbit/s ({:.1} %); {}",
        r.sent_bits_per_second / 1e6,
        r.asked_bits_per_second / 1e6,
        r.percent,
        why.join(", ")
    ))
}

fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// First and last moments per counting end, each on that end's clock, and the datagrams counted
/// in them.
#[derive(Default)]
pub(crate) struct Windows<'a> {
    ends: Vec<(&'a str, u64, u64)>,
    datagrams: u64,
}

impl<'a> Windows<'a> {
    fn add(&mut self, owner: &'a str, first: Option<u64>, last: Option<u64>, datagrams: u64) {
        let (Some(first), Some(last)) = (first, last) else {
            return;
        };
        self.datagrams += datagrams;
        match self.ends.iter_mut().find(|(o, _, _)| *o == owner) {
            Some((_, a, b)) => {
                *a = (*a).min(first);
                *b = (*b).max(last);
            }
            None => self.ends.push((owner, first, last)),
        }
    }

    /// The longest end's window, seconds: the ends ran side by side, so the run's window is the
    /// longest of theirs. None unless some end saw two distinct moments.
    fn longest_seconds(&self) -> Option<f64> {
        self.ends
            .iter()
            .filter(|(_, a, b)| b > a)
            .map(|(_, a, b)| (b - a) as f64 / 1e9)
            .reduce(f64::max)
    }

    /// Sets `side`'s seconds and rate to this window and its datagrams of `size` bytes; leaves
    /// it on the measurement window when no end saw two moments.
    pub(crate) fn rate(&self, side: &mut SideSummary, size: u32) {
        if let Some(secs) = self.longest_seconds() {
            side.seconds = secs;
            side.bits_per_second = (self.datagrams * u64::from(size) * 8) as f64 / secs;
        }
    }
}

/// Splits `lost` datagrams by where the hosts' counters say they were dropped: the receiver's
/// socket buffer, its interfaces, its softnet backlog, the sender; the rest was lost between the
/// hosts. The counters are host-wide, so each share is capped at what is still unattributed.
pub(crate) fn loss_causes(
    lost: u64,
    train_datagrams: Option<u64>,
    sent: &SideSummary,
    received: &SideSummary,
) -> LossCauses {
    let mut left = lost;
    let per_drop = train_datagrams.unwrap_or(1);
    let mut take = |counted: Option<u64>, per: u64| {
        counted.map(|c| {
            let share = c.saturating_mul(per).min(left);
            left -= share;
            share
        })
    };
    let rstack = received.stack;
    let interfaces = |s: &SideSummary, f: fn(&crate::metrics::sample::InterfaceUsage) -> u64| {
        (!s.interfaces.is_empty()).then(|| s.interfaces.iter().map(f).sum::<u64>())
    };
    let receive_buffer = take(rstack.map(|s| s.udp_receive_buffer_errors), per_drop);
    let receive_interface = take(interfaces(received, |i| i.rx_dropped + i.rx_errors), per_drop);
    let softnet = take(rstack.map(|s| s.softnet_dropped), per_drop);
    let snd_buf = sent.stack.map(|s| s.udp_send_buffer_errors);
    let tx = interfaces(sent, |i| i.tx_dropped + i.tx_errors);
    let sender = take(
        match (snd_buf, tx) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        },
        1,
    );
    LossCauses {
        receive_buffer,
        receive_interface,
        softnet,
        sender,
        network: left,
        train_datagrams,
    }
}

/// When every sender sent GSO trains and a receiver read through GRO, the kernel queued (and
/// dropped, and counted) whole trains: the datagrams in one, as the sender built them.
pub(crate) fn train_datagrams(spec: &UdpSpec, agents: &[AgentOutcome<'_>]) -> Option<u64> {
    use crate::engine::udp::{BATCH, GSO_MAX_BYTES};
    let reports = agents
        .iter()
        .flat_map(|a| a.report.into_iter().chain([a.client]))
        .flat_map(|r| &r.streams);
    let (mut gso, mut gro) = (false, false);
    for st in reports {
        gso |= st.udp_send.as_ref().is_some_and(|s| s.gso);
        gro |= st.udp_receive.as_ref().is_some_and(|r| r.gro);
    }
    let size = (spec.payload_bytes as usize).max(1);
    (gso && gro).then(|| (GSO_MAX_BYTES / size).clamp(1, BATCH) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::sample::{InterfaceUsage, StackUsage};

    #[test]
    fn relative_delays_start_at_zero_and_bin_in_fifty_one() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
        // Shifted to start at 1 ns: 1 ns is a delay of 0, 5001 ns one of 5 µs.
        h.record_n(1, 3).expect("records");
        h.record_n(5001, 1).expect("records");
        let (f, bins) = delay_figures(&h, true);
        assert_eq!((f.min, f.relative), (0.0, true));
        assert!((f.max - 5.0).abs() < 0.01, "{}", f.max);
        assert_eq!(
            bins.iter().map(|b| b.count).collect::<Vec<_>>(),
            [3, 1],
            "empty bins left out"
        );
        assert_eq!(bins[0].from_us, 0.0);
        let (absolute, _) = delay_figures(&h, false);
        assert_eq!(absolute.min, 0.001, "an absolute delay keeps its nanosecond");
    }

    #[test]
    fn spacing_bins_end_in_one_open_bin_for_the_overflow() {
        let bins = spacing_bins(BTreeMap::from([(0, 2), (20, 5)]), 0, 10.0);
        let edges: Vec<(f64, f64, u64)> = bins.iter().map(|b| (b.from_us, b.to_us, b.count)).collect();
        assert_eq!(edges, [(0.0, 10.0, 2), (20.0, 30.0, 5)]);
        let over = spacing_bins(BTreeMap::new(), 4, 10.0);
        assert_eq!(over.len(), 1);
        let last = &over[0];
        let from = crate::engine::udp::MAX_BINS as f64 * 10.0;
        assert_eq!((last.from_us, last.to_us, last.count), (from, f64::INFINITY, 4));
    }

    #[test]
    fn send_spacing_averages_only_the_senders_that_timed_their_sends() {
        let spec = UdpSpec::new();
        let timed = UdpSendReport {
            first_send_unix_ns: Some(1),
            spacing: crate::result::SendSpacing {
                mean_us: 10.0,
                stddev_us: 2.0,
                late_percent: 50.0,
                ..Default::default()
            },
            ..UdpSendReport::default()
        };
        let untimed = UdpSendReport::default();
        let s = send_spacing(&spec, &[&timed, &untimed]).expect("one timed sender");
        assert_eq!((s.mean, s.stddev, s.late_percent), (10.0, 2.0, 50.0));
        assert_eq!(s.requested, spec.gap_ns as f64 / 1e3);
        assert!(send_spacing(&spec, &[&untimed]).is_none(), "no sender timed anything");
    }

    fn side(stack: StackUsage, rx_dropped: u64) -> SideSummary {
        SideSummary {
            stack: Some(stack),
            interfaces: vec![InterfaceUsage {
                name: "eth0".into(),
                rx_dropped,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn issue_23_a_rate_not_reached_says_by_how_much_and_why() {
        let mut spec = UdpSpec::new();
        spec.gap_ns = 11_776; // 1472 bytes: 1 Gbit/s per stream
        let mut u = UdpSummary {
            send_window_seconds: Some(2.0),
            sent_bits_per_second: Some(485e6),
            ..Default::default()
        };
        let send = UdpSendReport {
            full_queue_retries: 7,
            ..Default::default()
        };
        u.send_rate = rate_achieved(&spec, &u, &[&send, &send]);
        let mut sent = side(
            StackUsage {
                udp_send_buffer_errors: 12,
                ..Default::default()
            },
            0,
        );
        sent.cpu.process_user_seconds = 0.4;
        sent.cpu.process_system_seconds = 3.4;
        let note = note_rate(&spec, &mut u, &sent).expect("a note");
        let r = u.send_rate.expect("a paced run's rate");
        assert_eq!((r.asked_bits_per_second, r.percent), (2e9, 24.25));
        assert_eq!(
            (r.streams, r.full_queue_retries, r.send_buffer_errors),
            (2, 14, Some(12))
        );
        assert_eq!(r.sender_busy_cores, Some(1.9));
        assert_eq!(
            note,
            "the rate asked was not reached: sent 485.0 of 2000.0 Mbit/s (24.2 %); 0.00 % of datagrams left late, \
             the kernel refused 14 sends with a full queue, the sender's stack could not queue 12 datagrams \
             (UDP SndbufErrors), the senders were CPU-bound (1.90 cores busy for 2 streams)"
        );
        // Reached: figures, no note; as fast as possible: no figure.
        u.sent_bits_per_second = Some(1.99e9);
        u.send_rate = rate_achieved(&spec, &u, &[&send, &send]);
        assert_eq!(note_rate(&spec, &mut u, &sent), None);
        spec.gap_ns = 0;
        assert_eq!(rate_achieved(&spec, &u, &[&send]), None);
    }

    #[test]
    fn loss_goes_first_to_the_receive_buffer_and_the_rest_to_the_network() {
        let rcv = side(
            StackUsage {
                udp_receive_buffer_errors: 4_400,
                ..Default::default()
            },
            0,
        );
        let c = loss_causes(4_500, None, &SideSummary::default(), &rcv);
        assert_eq!(c.receive_buffer, Some(4_400));
        assert_eq!(c.receive_interface, Some(0));
        assert_eq!(c.sender, None);
        assert_eq!(c.network, 100);
    }

    #[test]
    fn host_wide_counters_never_attribute_more_than_was_lost() {
        let rcv = side(
            StackUsage {
                udp_receive_buffer_errors: 30,
                softnet_dropped: 1_000,
                ..Default::default()
            },
            50,
        );
        let c = loss_causes(60, None, &rcv.clone(), &rcv);
        assert_eq!(c.receive_buffer, Some(30));
        assert_eq!(c.receive_interface, Some(30));
        assert_eq!(c.softnet, Some(0));
        assert_eq!(c.sender, Some(0));
        assert_eq!(c.network, 0);
    }
}
