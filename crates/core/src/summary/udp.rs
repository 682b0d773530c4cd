//! A UDP run's figures over all its streams: datagrams sent and received, loss against the
//! senders' counts, order, arrival spacing and one-way delay from the receivers' histograms.

use super::{AgentOutcome, decode};
use crate::result::{
    Bin, DelayFigures, ReceiverFigures, Role, SendSpacingFigures, SideReport, SideSummary, SpacingFigures, StreamLoss,
    StreamReport, UdpReceiveReport, UdpSendReport, UdpSummary,
};
use crate::spec::UdpSpec;
use hdrhistogram::Histogram;

fn find(r: Option<&SideReport>, stream: usize, role: Role) -> Option<&StreamReport> {
    r?.streams
        .iter()
        .find(|s| usize::from(s.stream) == stream && s.role == role)
}

/// Joins every stream's sender and receiver reports.
pub(crate) fn summarise(spec: &UdpSpec, agents: &[AgentOutcome<'_>], received: &SideSummary) -> UdpSummary {
    let mut u = UdpSummary::default();
    let mut spacing: Option<Histogram<u64>> = None;
    let mut delay: Option<Histogram<u64>> = None;
    let mut delays_relative = !spec.synced_clocks;
    let mut bins: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let mut overflow = 0u64;
    let mut jitter = Vec::new();
    let mut stamps: Vec<String> = Vec::new();
    let mut sends: Vec<&UdpSendReport> = Vec::new();
    // Datagrams the receivers were sent: with multicast each receiver is sent the same ones.
    let mut expected = 0u64;
    for (ai, a) in agents.iter().enumerate() {
        let mut mine = ReceiverFigures {
            agent: a.name.to_string(),
            ..Default::default()
        };
        let mut mine_expected = 0u64;
        for index in 0..spec.streams_per_agent() {
            let forward = spec.stream_flows_forward(index);
            let (snd_side, rcv_side) = if forward {
                (Some(a.client), a.report)
            } else {
                (a.report, Some(a.client))
            };
            let snd = find(snd_side, index, Role::Send).and_then(|s| s.udp_send.as_ref());
            let rcv: Option<&UdpReceiveReport> =
                find(rcv_side, index, Role::Receive).and_then(|s| s.udp_receive.as_ref());
            if let Some(s) = snd
                && (spec.multicast.is_none() || ai == 0)
            {
                u.datagrams_sent += s.datagrams;
                sends.push(s);
            }
            let Some(r) = rcv else { continue };
            mine.counted_by = if forward { a.name.to_string() } else { "client".into() };
            u.datagrams_received += r.datagrams;
            // The sender's own count is the truth for what was sent.
            let lost = match snd {
                Some(s) => s.datagrams.saturating_sub(r.datagrams),
                None => r.lost,
            };
            mine_expected += snd.map_or(r.datagrams + r.lost, |s| s.datagrams);
            mine.datagrams_received += r.datagrams;
            mine.lost += lost;
            mine.out_of_order += r.out_of_order;
            mine.duplicates += r.duplicates;
            u.lost += lost;
            u.out_of_order += r.out_of_order;
            u.duplicates += r.duplicates;
            jitter.push(r.jitter_us);
            if !stamps.contains(&r.timestamps) {
                stamps.push(r.timestamps.clone());
            }
            u.first_arrival = match (u.first_arrival, r.first_arrival_unix_ns) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            u.last_arrival = u.last_arrival.max(r.last_arrival_unix_ns);
            if lost > 0 {
                u.loss_ranges.push(StreamLoss {
                    agent: a.name.to_string(),
                    stream: index as u16,
                    lost,
                    ranges: r.loss_ranges.clone(),
                    picture: r.loss_picture.clone(),
                });
            }
            if let Some(h) = decode(&r.spacing_histogram) {
                match &mut spacing {
                    Some(all) => {
                        let _ = all.add(&h);
                    }
                    None => spacing = Some(h),
                }
            }
            if let Some(h) = decode(&r.delay_histogram)
                && !h.is_empty()
            {
                // Relative: each stream above its own minimum (the ends' clocks may differ by
                // any offset). Synchronised: the absolute delay.
                let shift = if spec.synced_clocks && r.delay_min_ns >= 0 {
                    r.delay_min_ns
                } else {
                    0
                };
                if spec.synced_clocks && r.delay_min_ns < 0 {
                    delays_relative = true;
                }
                let mut shifted = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds");
                for v in h.iter_recorded() {
                    let x = (v.value_iterated_to() as i64 + shift).clamp(1, 60_000_000_000) as u64;
                    let _ = shifted.record_n(x, v.count_at_value());
                }
                match &mut delay {
                    Some(all) => {
                        let _ = all.add(&shifted);
                    }
                    None => delay = Some(shifted),
                }
            }
            for [from, count] in &r.bins {
                *bins.entry(*from).or_default() += count;
            }
            overflow += r.bin_overflow;
        }
        if mine_expected > 0 {
            mine.loss_percent = 100.0 * mine.lost as f64 / mine_expected as f64;
            expected += mine_expected;
            u.receivers.push(mine);
        }
    }
    if expected > 0 {
        u.loss_percent = 100.0 * u.lost as f64 / expected as f64;
    }
    if received.seconds > 0.0 {
        u.packets_per_second = received.ops as f64 / received.seconds;
    }
    if !jitter.is_empty() {
        u.jitter_us = jitter.iter().sum::<f64>() / jitter.len() as f64;
    }
    u.timestamps = stamps.join(", ");
    u.arrival_spacing_us = spacing.filter(|h| !h.is_empty()).map(|h| SpacingFigures {
        mean: h.mean() / 1e3,
        stddev: h.stdev() / 1e3,
        p50: h.value_at_quantile(0.5) as f64 / 1e3,
        p99: h.value_at_quantile(0.99) as f64 / 1e3,
        min: h.min() as f64 / 1e3,
        max: h.max() as f64 / 1e3,
    });
    let bin = f64::from(spec.bin_us);
    u.arrival_spacing_histogram = bins
        .into_iter()
        .map(|(from, count)| Bin {
            from_us: from as f64,
            to_us: from as f64 + bin,
            count,
        })
        .collect();
    if overflow > 0 {
        let from = crate::engine::udp::MAX_BINS as f64 * bin;
        u.arrival_spacing_histogram.push(Bin {
            from_us: from,
            to_us: f64::INFINITY,
            count: overflow,
        });
    }
    if let Some(h) = delay.filter(|h| !h.is_empty()) {
        // Relative delays were shifted to start at 1 ns: the minimum is 0.
        let off = if delays_relative { 1.0 } else { 0.0 };
        let us = |v: u64| (v as f64 - off) / 1e3;
        u.one_way_delay_us = Some(DelayFigures {
            min: us(h.min()),
            mean: (h.mean() - off) / 1e3,
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
            relative: delays_relative,
        });
        let (lo, hi) = (h.min(), h.max());
        let width = ((hi - lo) / 50).max(1);
        let mut counts = vec![0u64; 51];
        for v in h.iter_recorded() {
            let i = ((v.value_iterated_to().clamp(lo, hi) - lo) / width) as usize;
            counts[i.min(50)] += v.count_at_value();
        }
        u.one_way_delay_histogram = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| Bin {
                from_us: us(lo + i as u64 * width),
                to_us: us(lo + (i as u64 + 1) * width),
                count: *c,
            })
            .collect();
    }
    if !sends.is_empty() {
        let n = sends.len() as f64;
        u.send_spacing_us = Some(SendSpacingFigures {
            requested: spec.gap_ns as f64 / 1e3,
            mean: sends.iter().map(|s| s.spacing.mean_us).sum::<f64>() / n,
            stddev: sends.iter().map(|s| s.spacing.stddev_us).sum::<f64>() / n,
            late_percent: sends.iter().map(|s| s.spacing.late_percent).sum::<f64>() / n,
        });
    }
    u
}
