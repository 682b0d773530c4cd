//! The receiving end of a UDP stream: recvmmsg, 64 datagrams per call (UDP GRO trains when
//! sending as fast as possible), each datagram placed by its sequence number (lost, out of
//! order, duplicated), its arrival time taken from the kernel (SO_TIMESTAMPNS), the spacing
//! between arrivals and the one-way delay recorded in histograms sized before the clock starts.
//!
//! UDP has no end of stream: a receiver stops when the sender's count has arrived, when the end
//! markers came and nothing more for a moment, or when nothing arrives for a while after the
//! sender's time was up. Out: a [`UdpReceiveReport`].

use super::along::AlongSequence;
use super::batch::Batch;
use super::header::{Framing, HEADER_BYTES, Header, KIND_END, realtime_ns};
use super::{BATCH, StreamRun, UdpStream};
use crate::engine::sequence::{SequenceTracker, tracked_datagrams, tracked_from_iperf3};
use crate::engine::sockopt::enable_gro;
use crate::result::{StreamEnd, UdpReceiveReport};
use crate::spec::UdpSpec;
use hdrhistogram::Histogram;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// After the end markers, how long a receiver waits for late datagrams.
const END_GRACE: Duration = Duration::from_millis(300);
/// After the sender's time is up, how long a receiver waits with nothing arriving.
const IDLE_AFTER_END: Duration = Duration::from_secs(2);
/// A receiver that has had nothing for this long gives up, whatever the sender's plan.
const IDLE_ABORT: Duration = Duration::from_secs(30);
/// Linear arrival-spacing bins kept; longer spacings go to one overflow count.
pub(crate) const MAX_BINS: usize = 100_000;
/// Room for one datagram's control messages (its kernel timestamp, its GRO segment size).
const CONTROL_BYTES: usize = 64;
/// Histograms hold 1 ns to 60 s at 3 significant digits (0.1 %).
const HIST_MAX_NS: u64 = 60_000_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")
}

/// A receiver's running state for one stream.
struct Receiver {
    tracker: SequenceTracker,
    spacing: Histogram<u64>,
    /// One-way delay at or above the first datagram's (`owd - base + 1`) and below it
    /// (`base - owd`): HdrHistogram's precision is relative to the value, so values are kept
    /// near zero rather than offset.
    delay_above: Histogram<u64>,
    delay_below: Histogram<u64>,
    delay_base_ns: Option<i64>,
    /// Loss and delay along the sequence, in fixed stretches.
    along: AlongSequence,
    bins: Vec<u64>,
    bin_ns: u64,
    bin_overflow: u64,
    prev: Option<(u64, u64)>,
    jitter_ns: f64,
    first_ns: Option<u64>,
    last_ns: u64,
    kernel_stamps: u64,
    user_stamps: u64,
    end_count: Option<u64>,
}

impl Receiver {
    fn new(spec: &UdpSpec, framing: Framing) -> Receiver {
        let expected = spec.expected_datagrams();
        let tracked = match framing {
            Framing::Linerate => tracked_datagrams(spec),
            Framing::Iperf3 { .. } => tracked_from_iperf3(spec),
        };
        Receiver {
            // Every number this test can send, allocated now: the map never grows in the loop.
            tracker: SequenceTracker::new(tracked),
            spacing: histogram(),
            delay_above: histogram(),
            delay_below: histogram(),
            delay_base_ns: None,
            along: AlongSequence::new(expected),
            bins: vec![0; MAX_BINS],
            bin_ns: u64::from(spec.bin_us) * 1000,
            bin_overflow: 0,
            prev: None,
            jitter_ns: 0.0,
            first_ns: None,
            last_ns: 0,
            kernel_stamps: 0,
            user_stamps: 0,
            end_count: None,
        }
    }

    /// One data datagram, arrived at `at_ns` (CLOCK_REALTIME). One numbered past what the test
    /// can send is counted out of range and adds to no other figure.
    #[inline]
    fn datagram(&mut self, h: &Header, at_ns: u64) {
        if !self.tracker.record(h.seq) {
            return;
        }
        self.first_ns.get_or_insert(at_ns);
        self.last_ns = at_ns;
        if let Some((prev_at, prev_send)) = self.prev {
            let spacing = at_ns.saturating_sub(prev_at);
            let _ = self.spacing.record(spacing.clamp(1, HIST_MAX_NS));
            match self.bins.get_mut((spacing / self.bin_ns) as usize) {
                Some(b) => *b += 1,
                None => self.bin_overflow += 1,
            }
            // RFC 3550 6.4.1: D = (Rj - Ri) - (Sj - Si); J += (|D| - J) / 16.
            let d = (at_ns as i64 - prev_at as i64) - (h.send_ns as i64 - prev_send as i64);
            self.jitter_ns += ((d.unsigned_abs() as f64) - self.jitter_ns) / 16.0;
        }
        self.prev = Some((at_ns, h.send_ns));
        // One-way delay against the first datagram's (the ends' clocks may differ by anything).
        let owd = at_ns as i64 - h.send_ns as i64;
        let base = *self.delay_base_ns.get_or_insert(owd);
        let d = owd - base;
        self.along.record(h.seq, d);
        if d >= 0 {
            let _ = self.delay_above.record((d + 1).min(HIST_MAX_NS as i64) as u64);
        } else {
            let _ = self.delay_below.record((-d).min(HIST_MAX_NS as i64) as u64);
        }
    }

    /// The one-way delay above its minimum (stored + 1 ns, so 0 fits), and that minimum.
    fn delay_above_minimum(&self) -> (Histogram<u64>, i64) {
        let base = self.delay_base_ns.unwrap_or(0);
        let min = if self.delay_below.is_empty() {
            base + self.delay_above.min() as i64 - 1
        } else {
            base - self.delay_below.max() as i64
        };
        let mut h = histogram();
        let mut add = |owd: i64, n: u64| {
            let _ = h.record_n((owd - min + 1).clamp(1, HIST_MAX_NS as i64) as u64, n);
        };
        for v in self.delay_above.iter_recorded() {
            add(base + v.value_iterated_to() as i64 - 1, v.count_at_value());
        }
        for v in self.delay_below.iter_recorded() {
            add(base - v.value_iterated_to() as i64, v.count_at_value());
        }
        (h, min)
    }

    pub(super) fn report(self, spec: &UdpSpec, gro: bool) -> UdpReceiveReport {
        let sent = self.end_count;
        let (delay, delay_min_ns) = self.delay_above_minimum();
        let seq = self.tracker.summary(sent, crate::result::MAX_LOSS_RANGES);
        let end = self.tracker.end(sent);
        let along = (self.tracker.received() > 0).then(|| {
            let min_relative = delay_min_ns - self.delay_base_ns.unwrap_or(0);
            self.along.profile(&self.tracker, end, min_relative)
        });
        let hex = crate::codec::histogram_to_hex;
        let bins = self
            .bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| [i as u64 * u64::from(spec.bin_us), *c])
            .collect();
        UdpReceiveReport {
            datagrams: seq.received,
            lost: seq.lost,
            out_of_order: seq.out_of_order,
            duplicates: seq.duplicates,
            out_of_range: seq.out_of_range,
            tracked_datagrams: Some(self.tracker.limit()),
            highest_plus_one: self.tracker.highest_plus_one(),
            end_count: sent,
            loss_ranges: seq.loss_ranges,
            loss_range_count: seq.loss_range_count,
            loss_picture: self.tracker.loss_picture(sent, 64),
            first_arrival_unix_ns: self.first_ns,
            last_arrival_unix_ns: self.first_ns.map(|_| self.last_ns),
            jitter_us: self.jitter_ns / 1e3,
            timestamps: match (self.kernel_stamps, self.user_stamps) {
                (_, 0) => "kernel",
                (0, _) => "user",
                _ => "kernel and user",
            }
            .into(),
            spacing_histogram: hex(&self.spacing),
            delay_histogram: hex(&delay),
            delay_min_ns,
            bin_us: spec.bin_us,
            bins,
            bin_overflow: self.bin_overflow,
            gro,
            along_sequence: along,
        }
    }
}

/// The kernel's receive timestamp of a message (SCM_TIMESTAMPNS) and, with UDP GRO, the size of
/// each datagram in it (UDP_GRO).
fn stamps(hdr: &libc::msghdr) -> (Option<u64>, Option<usize>) {
    let (mut at, mut segment) = (None, None);
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                at = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            } else if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let g: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                segment = usize::try_from(g).ok();
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    (at, segment)
}

/// One receiving stream, until its end.
/// What a receiver's stop rules look at after each call.
#[derive(Clone, Copy, Debug)]
struct Watch {
    now: Instant,
    last_arrival: Instant,
    /// When the first end marker came.
    end_seen: Option<Instant>,
    /// The sender's count: from its end markers, else the test's (`-n`).
    count: Option<u64>,
    received: u64,
    /// A datagram of the test has arrived.
    arrived: bool,
    /// The test is a count (`-n`): the sender's end is its count, not a time.
    counted: bool,
    /// The sender's time is up, or it was told to stop.
    sender_done: bool,
    /// The sender was told to stop.
    stopped: bool,
    /// iperf3's framing: no end markers.
    iperf3: bool,
}

impl Watch {
    /// Whether the stream has ended, and how: all the sender's datagrams are here; the end
    /// markers came and a moment for stragglers has passed; nothing arrived for a while after
    /// the sender was done; or nothing for [`IDLE_ABORT`], whatever the sender's plan.
    fn end(&self) -> Option<StreamEnd> {
        if let Some(n) = self.count
            && self.received >= n
        {
            return Some(StreamEnd::Eof);
        }
        if self.end_seen.is_some_and(|t| self.now - t >= END_GRACE) {
            return Some(StreamEnd::Eof);
        }
        let idle = self.now - self.last_arrival;
        // iperf3's sender sends no end marker: once its control connection says the test is
        // over (the stop), stragglers get the markers' grace.
        let after_end = if self.iperf3 && self.stopped {
            END_GRACE
        } else {
            IDLE_AFTER_END
        };
        if (self.sender_done || self.counted) && idle >= after_end && self.arrived {
            return Some(StreamEnd::Eof);
        }
        if idle >= IDLE_ABORT {
            return Some(StreamEnd::Stopped);
        }
        None
    }
}

/// One receiving stream. Its setup (the batch of messages, `Batch::new`) and its stop rules
/// ([`Watch::end`]) are apart; the receive loop stays whole here: it is the per-datagram hot
/// path (each message split into its GRO segments, each datagram parsed and placed), and its
/// counts are locals stored to the shared counters once per call.
pub(super) fn receive_stream(run: StreamRun<'_, '_>, idx: usize, s: &UdpStream) -> UdpReceiveReport {
    let (spec, deadlines, shared, gate) = (run.spec, run.deadlines, run.shared, run.gate);
    // As fast as possible, UDP GRO hands up trains of datagrams in one message (each segment
    // keeps its own header; the train shares one arrival time).
    let gro = spec.gap_ns == 0 && enable_gro(&s.socket);
    let size = if gro {
        usize::from(u16::MAX)
    } else {
        (spec.payload_bytes as usize).max(HEADER_BYTES) + 1
    };
    let mut rx = Receiver::new(spec, s.framing);
    let mut batch = Batch::new(size, BATCH, CONTROL_BYTES);
    let fd = s.socket.as_raw_fd();
    let counter = &shared.counters[idx];
    let (deadline, expected) = (deadlines.deadline(), deadlines.count());
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared.t0.get().expect("time zero is set before the gate opens");
    let mut last_arrival = Instant::now();
    let mut end_seen: Option<Instant> = None;
    let end = loop {
        if shared.control.aborted() {
            break StreamEnd::Stopped;
        }
        for m in batch.msgs.iter_mut() {
            m.msg_hdr.msg_controllen = CONTROL_BYTES as _;
        }
        // SAFETY: every header points into the batch's buffers, sized as declared.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                batch.msgs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        let now = Instant::now();
        if got > 0 {
            last_arrival = now;
            let mut user_ns = None;
            let (mut bytes, mut data) = (0u64, 0u64);
            for (i, m) in batch.msgs.iter().take(got as usize).enumerate() {
                let len = (m.msg_len as usize).min(size);
                let (stamp, segment) = stamps(&m.msg_hdr);
                let at = match stamp {
                    Some(t) => t,
                    None => *user_ns.get_or_insert_with(realtime_ns),
                };
                // Without GRO (or for a lone datagram) the message is one datagram.
                let seg = segment.filter(|g| *g > 0 && *g < len).unwrap_or(len);
                let message = &batch.buf[i * size..i * size + len];
                for d in message.chunks(seg) {
                    let Some(h) = s.framing.parse(d, s.wire_id, s.test_id) else {
                        shared.stray.fetch_add(1, Relaxed);
                        continue;
                    };
                    if h.test_id != s.test_id || h.stream != s.wire_id {
                        shared.stray.fetch_add(1, Relaxed);
                        continue;
                    }
                    if h.kind == KIND_END {
                        rx.end_count = Some(h.seq);
                        end_seen.get_or_insert(now);
                        continue;
                    }
                    if stamp.is_some() {
                        rx.kernel_stamps += 1;
                    } else {
                        rx.user_stamps += 1;
                    }
                    rx.datagram(&h, at);
                    bytes += d.len() as u64;
                    data += 1;
                }
            }
            counter.bytes.store(counter.bytes.load(Relaxed) + bytes, Relaxed);
            counter.ops.store(counter.ops.load(Relaxed) + data, Relaxed);
        } else {
            let e = std::io::Error::last_os_error();
            if !matches!(
                e.raw_os_error(),
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ECONNREFUSED)
            ) {
                counter
                    .other_errors
                    .store(counter.other_errors.load(Relaxed) + 1, Relaxed);
                break StreamEnd::Error;
            }
        }
        let stopped = shared.control.sending_stopped();
        let watch = Watch {
            now,
            last_arrival,
            end_seen,
            count: rx.end_count.or(expected),
            received: rx.tracker.received(),
            arrived: rx.first_ns.is_some(),
            counted: expected.is_some(),
            sender_done: deadline.is_some_and(|d| now - start >= d) || stopped,
            stopped,
            iperf3: matches!(s.framing, Framing::Iperf3 { .. }),
        };
        if let Some(end) = watch.end() {
            break end;
        }
    };
    shared.finish(idx, end);
    rx.report(spec, gro)
}

#[cfg(test)]
mod tests {
    use super::super::header::KIND_DATA;
    use super::*;
    use crate::engine::sequence::MAX_DATAGRAMS_PER_SECOND;
    use crate::spec::Limit;

    #[test]
    fn a_receiver_ends_on_its_count_the_markers_grace_or_silence() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let quiet = Watch {
            now: at(0),
            last_arrival: at(0),
            end_seen: None,
            count: None,
            received: 10,
            arrived: true,
            counted: false,
            sender_done: false,
            stopped: false,
            iperf3: false,
        };
        assert_eq!(quiet.end(), None);
        assert_eq!(
            Watch {
                count: Some(10),
                ..quiet
            }
            .end(),
            Some(StreamEnd::Eof)
        );
        assert_eq!(
            Watch {
                count: Some(11),
                ..quiet
            }
            .end(),
            None
        );
        let marked = Watch {
            end_seen: Some(at(0)),
            count: Some(11),
            ..quiet
        };
        assert_eq!(Watch { now: at(299), ..marked }.end(), None);
        assert_eq!(Watch { now: at(300), ..marked }.end(), Some(StreamEnd::Eof));
        // After the sender is done: two seconds of nothing, once something came.
        let done = Watch {
            sender_done: true,
            now: at(2_000),
            ..quiet
        };
        assert_eq!(done.end(), Some(StreamEnd::Eof));
        assert_eq!(Watch { now: at(1_999), ..done }.end(), None);
        assert_eq!(Watch { arrived: false, ..done }.end(), None);
        assert_eq!(
            Watch {
                sender_done: false,
                counted: true,
                ..done
            }
            .end(),
            Some(StreamEnd::Eof)
        );
        // iperf3 has no markers: its stop gives the markers' grace.
        let iperf3 = Watch {
            now: at(300),
            sender_done: true,
            stopped: true,
            iperf3: true,
            ..quiet
        };
        assert_eq!(iperf3.end(), Some(StreamEnd::Eof));
        assert_eq!(
            Watch {
                iperf3: false,
                ..iperf3
            }
            .end(),
            None
        );
        // Nothing at all for 30 s: given up, arrived or not.
        let silent = Watch {
            now: at(30_000),
            arrived: false,
            ..quiet
        };
        assert_eq!(silent.end(), Some(StreamEnd::Stopped));
    }

    #[test]
    fn issue_22_a_receiver_tracks_what_its_test_can_send_and_no_more() {
        // Both ends receive through this: the agent, and the client under `udp -R`.
        let mut spec = UdpSpec::new();
        spec.timing.limit = Limit::Seconds(2.0);
        let mut rx = Receiver::new(&spec, Framing::Linerate);
        let h = |seq| Header {
            stream: 0,
            kind: KIND_DATA,
            seq,
            send_ns: 1_000,
            test_id: 1,
        };
        rx.datagram(&h(0), 2_000);
        rx.datagram(&h(1), 2_100);
        rx.datagram(&h((1 << 32) - 64), 3_000);
        rx.end_count = Some(2);
        let r = rx.report(&spec, false);
        assert_eq!((r.datagrams, r.lost, r.out_of_range), (2, 0, 1));
        assert_eq!(r.tracked_datagrams, Some(2 * MAX_DATAGRAMS_PER_SECOND + 1));
        assert_eq!(r.highest_plus_one, 2);
        assert_eq!(
            r.last_arrival_unix_ns,
            Some(2_100),
            "the forged datagram adds to no figure"
        );
    }
}
