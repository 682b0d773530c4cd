//! What a UDP, request-response or HTTP run adds to its report: the arrival-spacing,
//! one-way-delay and latency histograms, the loss pattern, and the HTTP timeline.

use super::{mbit, middle, seconds};
use crate::plot::{Axis, Figure, Mark, Point, Series, Style};
use linerate_wire::result::{Bin, HttpIntervalRecord, HttpSummary, TestResult};

/// Columns of the loss pattern along the sequence.
const LOSS_COLUMNS: u64 = 64;

fn bars(bins: &[Bin]) -> Vec<Point> {
    bins.iter()
        .map(|b| Point::bar(b.from_us, b.to_us, b.count as f64))
        .collect()
}

/// Counts of datagrams per bin: a log axis when they span two decades (a long tail of rare
/// spacings would otherwise not show beside the peak).
fn counts_axis(bins: &[Bin]) -> Axis {
    let counts: Vec<f64> = bins.iter().map(|b| b.count as f64).collect();
    Axis::fitting("datagrams", "count", &counts)
}

/// `fig-udp-interarrival`, `fig-udp-loss`, `fig-udp-owd-histogram`.
/// A UDP stream as its series is named: `stream 0 to h2` where the client sends, `stream 0
/// from h3` where the agent does (`--reverse`).
fn stream_name(r: &TestResult, stream: u16, agent: &str) -> String {
    let toward = match r.options.direction() {
        linerate_wire::spec::Direction::Reverse => "from",
        _ => "to",
    };
    format!("stream {stream} {toward} {agent}")
}

pub fn udp(r: &TestResult) -> Vec<Figure> {
    let Some(u) = &r.summary.udp else { return Vec::new() };
    let mut out = Vec::new();
    if !u.arrival_spacing_histogram.is_empty() {
        let mut f = Figure::new(
            "fig-udp-interarrival",
            "Spacing between arrivals",
            Axis::linear("time between consecutive datagrams", "µs"),
            counts_axis(&u.arrival_spacing_histogram),
        );
        f.series
            .push(Series::new("arrivals", Style::Bars, bars(&u.arrival_spacing_histogram)));
        if let Some(sp) = &u.arrival_spacing_us {
            f.marks.push(Mark::VLine {
                x: sp.p50,
                label: format!("median {:.1} µs", sp.p50),
            });
        }
        f.description = format!(
            "Histogram of the time between consecutive arrivals ({} timestamps){}.",
            u.timestamps,
            u.arrival_spacing_us.map_or(String::new(), |s| format!(
                ": mean {:.2} µs, median {:.2} µs, 99th percentile {:.2} µs, max {:.2} µs",
                s.mean, s.p50, s.p99, s.max
            ))
        );
        out.push(f);
    }
    out.push(loss_pattern(r));
    out.extend(delay_along(r));
    if !u.one_way_delay_histogram.is_empty() {
        let relative = u.one_way_delay_us.is_none_or(|d| d.relative);
        let mut f = Figure::new(
            "fig-udp-owd-histogram",
            "One-way delay",
            Axis::linear(
                if relative {
                    "one-way delay above its minimum"
                } else {
                    "one-way delay"
                },
                "µs",
            ),
            counts_axis(&u.one_way_delay_histogram),
        );
        f.series
            .push(Series::new("datagrams", Style::Bars, bars(&u.one_way_delay_histogram)));
        f.description = format!(
            "Histogram of the one-way delay{}{}.",
            if relative {
                " above the smallest seen (the ends' clocks are not taken as synchronised)"
            } else {
                ""
            },
            u.one_way_delay_us.map_or(String::new(), |d| format!(
                ": median {:.2} µs, 99th percentile {:.2} µs, max {:.2} µs",
                d.p50, d.p99, d.max
            ))
        );
        out.push(f);
    }
    out
}

/// `fig-udp-loss`: lost datagrams in 64 equal stretches of each stream's sequence numbers, from
/// the document's loss ranges (the first runs of each stream; the description says when there
/// were more).
fn loss_pattern(r: &TestResult) -> Figure {
    let u = r.summary.udp.as_ref().expect("called for UDP runs");
    let streams = (r.summary.sent.streams.max(1)) as u64;
    let per_stream = u.datagrams_sent.div_ceil(streams);
    let mut f = Figure::new(
        "fig-udp-loss",
        "Loss pattern along the sequence",
        Axis::linear("sequence number", "datagram"),
        Axis::linear("datagrams lost", "count per stretch"),
    );
    let mut drawn_lost = 0;
    // Exact, from the receivers' profiles along the sequence; else from the listed loss runs.
    for p in &u.along_sequence {
        let w = p.profile.width_datagrams as f64;
        let points = p
            .profile
            .lost
            .iter()
            .enumerate()
            .map(|(i, n)| Point::bar(i as f64 * w, (i + 1) as f64 * w, *n as f64))
            .collect();
        drawn_lost += p.profile.lost.iter().sum::<u64>();
        f.series
            .push(Series::new(&stream_name(r, p.stream, &p.agent), Style::Bars, points));
    }
    let ranges = if u.along_sequence.is_empty() {
        u.loss_ranges.as_slice()
    } else {
        &[]
    };
    for s in ranges {
        let end = s
            .ranges
            .iter()
            .map(|l| l.last + 1)
            .max()
            .unwrap_or(0)
            .max(per_stream)
            .max(1);
        let width = end.div_ceil(LOSS_COLUMNS).max(1);
        let mut lost = vec![0u64; end.div_ceil(width) as usize];
        for l in &s.ranges {
            let mut seq = l.first;
            while seq <= l.last {
                let col = seq / width;
                let stop = ((col + 1) * width).min(l.last + 1);
                lost[col as usize] += stop - seq;
                drawn_lost += stop - seq;
                seq = stop;
            }
        }
        let points = lost
            .iter()
            .enumerate()
            .map(|(i, n)| Point::bar(i as f64 * width as f64, ((i as u64 + 1) * width) as f64, *n as f64))
            .collect();
        f.series
            .push(Series::new(&stream_name(r, s.stream, &s.agent), Style::Bars, points));
    }
    if f.series.iter().all(|s| s.points.iter().all(|p| p.y == 0.0)) {
        f.series.clear();
        // Nothing lost: a zero line over the sequence, so the reader sees the stream was whole.
        f.series.push(Series::new(
            "lost (none)",
            Style::Line,
            vec![Point::xy(0.0, 0.0), Point::xy(per_stream.max(1) as f64, 0.0)],
        ));
    }
    f.description = if u.lost == 0 {
        format!("No datagram of the {} sent was lost.", u.datagrams_sent)
    } else {
        format!(
            "Lost datagrams in stretches of each stream's sequence numbers: {} lost of {} sent ({:.3} %){}.",
            u.lost,
            u.datagrams_sent,
            u.loss_percent,
            if drawn_lost < u.lost && u.along_sequence.is_empty() {
                format!("; the document lists the first runs only, {drawn_lost} of the lost are drawn")
            } else {
                String::new()
            }
        )
    };
    f
}

/// `fig-udp-owd-sequence`: the one-way delay against sequence number, each stretch's mean with
/// its least and most as an error bar.
fn delay_along(r: &TestResult) -> Option<Figure> {
    let u = r.summary.udp.as_ref()?;
    let mut f = Figure::new(
        "fig-udp-owd-sequence",
        "One-way delay along the sequence",
        Axis::linear("sequence number", "datagram"),
        Axis::linear("one-way delay above the stream's minimum", "µs"),
    );
    let mut worst: f64 = 0.0;
    for p in &u.along_sequence {
        let q = &p.profile;
        let w = q.width_datagrams as f64;
        let points: Vec<Point> = (0..q.delay_mean_us.len())
            .filter_map(|i| {
                let mean = q.delay_mean_us[i]?;
                let (lo, hi) = (
                    q.delay_min_us.get(i).copied().flatten()?,
                    q.delay_max_us.get(i).copied().flatten()?,
                );
                worst = worst.max(hi);
                Some(Point {
                    error: Some((lo, hi)),
                    ..Point::xy((i as f64 + 0.5) * w, mean)
                })
            })
            .collect();
        f.series
            .push(Series::new(&stream_name(r, p.stream, &p.agent), Style::Line, points));
    }
    f.description = format!(
        "Mean one-way delay above each stream's minimum over stretches of {} sequence numbers, µs, with each stretch's least and most as bars; the most seen {worst:.1} µs.",
        u.along_sequence.first().map_or(0, |p| p.profile.width_datagrams)
    );
    f.has_data().then_some(f)
}

/// `fig-rr-histogram`: the round-trip histogram with its peaks and their separations.
pub fn rr(r: &TestResult) -> Vec<Figure> {
    let Some(rr) = &r.summary.rr else { return Vec::new() };
    if rr.histogram.is_empty() {
        return Vec::new();
    }
    let mut f = Figure::new(
        "fig-rr-histogram",
        "Round-trip latency",
        // From the first bin, not from 0: the round trips sit far from zero.
        Axis::linear("round-trip time", "µs").with_min(rr.histogram[0].from_us),
        Axis::linear("transactions", "count"),
    );
    f.series
        .push(Series::new("transactions", Style::Bars, bars(&rr.histogram)));
    for p in &rr.peaks {
        f.marks.push(Mark::VLine {
            x: p.at_us,
            label: format!("peak {:.2} µs", p.at_us),
        });
    }
    if !rr.peak_separations_us.is_empty() {
        let seps: Vec<String> = rr.peak_separations_us.iter().map(|s| format!("{s:.2}")).collect();
        f.marks.push(Mark::Note {
            text: format!("peaks {} µs apart", seps.join(", ")),
        });
    }
    f.description = format!(
        "Histogram of {} round trips between the 0.1th and 99.9th percentiles{}; peaks at {} µs{}.",
        rr.transactions,
        rr.latency_us.map_or(String::new(), |l| format!(
            " (median {:.2} µs, 99th percentile {:.2} µs)",
            l.p50, l.p99
        )),
        rr.peaks
            .iter()
            .map(|p| format!("{:.2}", p.at_us))
            .collect::<Vec<_>>()
            .join(", "),
        if rr.peak_separations_us.is_empty() {
            String::new()
        } else {
            format!(
                ", separated by {} µs",
                rr.peak_separations_us
                    .iter()
                    .map(|s| format!("{s:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    vec![f]
}

/// The HTTP timeline: `fig-http-rate` (responses/s and users), `fig-http-throughput`,
/// `fig-http-response-time`, `fig-http-connections`, each with the ramp shaded; and the
/// server's NIC, `fig-http-nic`.
pub fn http(r: &TestResult) -> Vec<Figure> {
    let Some(h) = &r.summary.http else { return Vec::new() };
    let mut out = Vec::new();
    if let Some(t) = Timeline::of(r) {
        out.extend([
            http_rate(&t, h),
            http_throughput(&t, h),
            http_response_time(&t, h),
            http_connections(&t, h),
        ]);
    }
    out.extend(http_nic(r));
    out
}

/// An HTTP run's intervals, ramp included, and where its ramp ends: what every figure over
/// time draws from.
struct Timeline<'a> {
    records: Vec<&'a HttpIntervalRecord>,
    /// Seconds since the start; 0 with no ramp.
    ramp_end: f64,
}

impl<'a> Timeline<'a> {
    /// The run's HTTP intervals; None when it has none.
    fn of(r: &'a TestResult) -> Option<Timeline<'a>> {
        let records = crate::text::http::http_intervals(r);
        if records.is_empty() {
            return None;
        }
        let ramp_end = records
            .iter()
            .filter(|i| i.ramp)
            .map(|i| seconds(i.end_ns))
            .fold(0.0, f64::max);
        Some(Timeline { records, ramp_end })
    }

    /// A figure of this timeline: time along x, the ramp shaded once its series are in.
    fn figure(&self, id: &str, title: &str, y: Axis) -> Figure {
        Figure::new(id, title, Axis::linear("time since start", "s"), y)
    }

    /// A line of `f` at each interval's middle, leaving out the intervals it has no value for.
    fn line(&self, name: &str, f: &dyn Fn(&HttpIntervalRecord) -> Option<f64>) -> Series {
        Series::new(
            name,
            Style::Line,
            self.records
                .iter()
                .filter_map(|i| f(i).map(|y| Point::xy(middle(i.start_ns, i.end_ns), y)))
                .collect(),
        )
    }

    /// Shades the ramp on `f`.
    fn shade(&self, f: &mut Figure) {
        if self.ramp_end > 0.0 {
            f.marks.push(Mark::Band {
                from: 0.0,
                to: self.ramp_end,
                label: "ramp".to_string(),
            });
        }
    }

    /// The sentence every description ends with when there was a ramp.
    fn ramp_note(&self) -> String {
        if self.ramp_end > 0.0 {
            format!(
                " The ramp (first {:.1} s, shaded) is left out of the summary.",
                self.ramp_end
            )
        } else {
            String::new()
        }
    }
}

/// `fig-http-rate`: responses per second, with the users started on the right axis.
fn http_rate(t: &Timeline<'_>, h: &HttpSummary) -> Figure {
    let mut f = t.figure(
        "fig-http-rate",
        "Responses and users over time",
        Axis::linear("responses", "1/s"),
    );
    f.y2 = Some(Axis::linear("users started", "").with_min(0.0));
    f.series.push(t.line("responses/s", &|i| Some(i.responses_per_second)));
    f.series.push(t.line("users", &|i| Some(i.users as f64)).on_right());
    t.shade(&mut f);
    f.description = format!(
        "Responses per second at each interval, with the users started (right axis); steady state {:.1} responses/s with {} users.{}",
        h.responses_per_second,
        h.users,
        t.ramp_note()
    );
    f
}

/// `fig-http-throughput`: bits read and written per interval.
fn http_throughput(t: &Timeline<'_>, h: &HttpSummary) -> Figure {
    let mut f = t.figure(
        "fig-http-throughput",
        "HTTP throughput over time",
        Axis::linear("throughput", "Mbit/s"),
    );
    f.series
        .push(t.line("in (responses)", &|i| Some(mbit(i.bits_per_second_in))));
    f.series
        .push(t.line("out (requests)", &|i| Some(mbit(i.bits_per_second_out))));
    t.shade(&mut f);
    f.description = format!(
        "Bits read (responses) and written (requests) per interval, Mbit/s (10^6 bits/s); steady state {:.1} Mbit/s in.{}",
        mbit(h.bits_per_second_in),
        t.ramp_note()
    );
    f
}

/// `fig-http-response-time`: mean, longest, median and 99th percentile per interval, with the
/// steady state's median and 99th percentile as dashed lines.
fn http_response_time(t: &Timeline<'_>, h: &HttpSummary) -> Figure {
    // Log when the longest responses dwarf the typical ones by two decades or more.
    let times: Vec<f64> = t
        .records
        .iter()
        .flat_map(|i| {
            [
                i.response_time_mean_us,
                i.response_time_max_us,
                i.response_time_p50_us,
                i.response_time_p99_us,
            ]
        })
        .flatten()
        .chain(h.response_time_us.iter().flat_map(|t| [t.p50, t.p99]))
        .map(|v| v / 1e3)
        .collect();
    let mut f = t.figure(
        "fig-http-response-time",
        "Response time over time",
        Axis::fitting("response time", "ms", &times),
    );
    f.series
        .push(t.line("mean", &|i| i.response_time_mean_us.map(|v| v / 1e3)));
    f.series
        .push(t.line("max", &|i| i.response_time_max_us.map(|v| v / 1e3)));
    f.series
        .push(t.line("p50", &|i| i.response_time_p50_us.map(|v| v / 1e3)));
    f.series
        .push(t.line("p99", &|i| i.response_time_p99_us.map(|v| v / 1e3)));
    if let Some(steady) = &h.response_time_us {
        f.marks.push(Mark::HLine {
            y: steady.p50 / 1e3,
            label: format!("steady p50 {:.2} ms", steady.p50 / 1e3),
        });
        f.marks.push(Mark::HLine {
            y: steady.p99 / 1e3,
            label: format!("steady p99 {:.2} ms", steady.p99 / 1e3),
        });
    }
    t.shade(&mut f);
    f.description = format!(
        "Mean, longest, median and 99th-percentile response time per interval (percentiles within 12.5 %), ms, from each request's intended start to its last byte{}.{}",
        h.response_time_us.map_or(String::new(), |t| format!(
            "; over the steady state p50 {:.2} ms and p99 {:.2} ms (dashed lines)",
            t.p50 / 1e3,
            t.p99 / 1e3
        )),
        t.ramp_note()
    );
    f
}

/// `fig-http-connections`: connections attempted, successful and unsuccessful, and failed
/// requests, per second.
fn http_connections(t: &Timeline<'_>, h: &HttpSummary) -> Figure {
    let mut f = t.figure(
        "fig-http-connections",
        "Connections over time",
        Axis::linear("rate", "1/s"),
    );
    f.series
        .push(t.line("attempted/s", &|i| Some(i.connections_per_second)));
    f.series
        .push(t.line("successful/s", &|i| i.connections_successful_per_second));
    f.series
        .push(t.line("unsuccessful/s", &|i| i.connections_unsuccessful_per_second));
    f.series.push(t.line("errors/s", &|i| {
        let secs = seconds(i.end_ns.saturating_sub(i.start_ns));
        (secs > 0.0).then(|| i.errors as f64 / secs)
    }));
    let c = &h.connections.per_second;
    f.marks.push(Mark::Note {
        text: format!(
            "steady state: attempted {:.1}/s, successful {:.1}/s, unsuccessful {:.1}/s",
            c.attempted, c.successful, c.unsuccessful
        ),
    });
    t.shade(&mut f);
    f.description = format!(
        "Connections attempted, successful and unsuccessful (by when each attempt began) and failed requests per second at each interval; over the steady state {:.1} connections/s attempted, {:.1} successful, {:.1} unsuccessful.{}",
        c.attempted,
        c.successful,
        c.unsuccessful,
        t.ramp_note()
    );
    f
}

/// `fig-http-nic`: the server host's interfaces over the steady state, when an agent sampled them.
fn http_nic(r: &TestResult) -> Option<Figure> {
    let server = r.summary.server.as_ref().filter(|s| !s.interfaces.is_empty())?;
    let names: Vec<String> = server.interfaces.iter().map(|i| i.name.clone()).collect();
    let bar = |k: usize, v: &dyn Fn(&linerate_wire::metrics::sample::InterfaceUsage) -> f64| {
        server
            .interfaces
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let from = i as f64 - 0.4 + k as f64 * 0.2;
                Point::bar(from, from + 0.2, v(n))
            })
            .collect::<Vec<_>>()
    };
    let mut f = Figure::new(
        "fig-http-nic",
        "Server's interfaces over the steady state",
        Axis::categories("interface", names),
        Axis::linear("rate", "Mbit/s").with_min(0.0),
    );
    f.y2 = Some(Axis::linear("packets", "1/s").with_min(0.0));
    f.series.push(Series::new(
        "received Mbit/s",
        Style::Bars,
        bar(0, &|n| mbit(n.rx_bits_per_second)),
    ));
    f.series.push(Series::new(
        "sent Mbit/s",
        Style::Bars,
        bar(1, &|n| mbit(n.tx_bits_per_second)),
    ));
    f.series
        .push(Series::new("received packets/s", Style::Bars, bar(2, &|n| n.rx_packets_per_second)).on_right());
    f.series
        .push(Series::new("sent packets/s", Style::Bars, bar(3, &|n| n.tx_packets_per_second)).on_right());
    f.description = format!(
        "The server host's interfaces over the window: {}.",
        server
            .interfaces
            .iter()
            .map(|n| format!(
                "{} received {:.1} Mbit/s in {:.0} packets/s, sent {:.1} Mbit/s in {:.0} packets/s",
                n.name,
                mbit(n.rx_bits_per_second),
                n.rx_packets_per_second,
                mbit(n.tx_bits_per_second),
                n.tx_packets_per_second
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Some(f)
}
