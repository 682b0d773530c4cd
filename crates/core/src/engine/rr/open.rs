//! The request-response engine's open loop (`--tps`, TCP or UDP without `--connect`):
//! requests leave on a schedule whatever is outstanding, their answers found by number. In: one
//! asking stream and the run's plan; out: the stream's report, with the requests sent, not sent,
//! lost and stale, and the round trips from the scheduled moment and from the send.

use super::record::{ProbeRecord, gather_stamp, stamp_of};
use super::stream::{HIST_MAX_NS, POLL, RrSocket, RrStream, hex, histogram, raw_fd, tag};
use super::{StreamRun, ask_buffers};
use crate::engine::pacing::{Pacer, SPIN};
use crate::result::{OpenLoopReport, RrStreamReport, StreamEnd};
use crate::spec::RrSpec;
use hdrhistogram::Histogram;
use std::io::{self, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

/// The most requests sent in a row before the stream reads what has come.
const BURST: u32 = 64;

/// Open loop: where one request in flight stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Flight {
    /// No request here: never used, answered, or (UDP) given up as lost.
    #[default]
    Free,
    /// Sent and not answered yet, within its timeout.
    Waiting,
    /// TCP: past its timeout and counted lost, its answer still to come (TCP answers in order);
    /// the answer counts as stale when it does.
    Overdue,
}

/// Open loop: one request in flight.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    seq: u64,
    /// When the schedule said it should leave, ns since time zero.
    due_ns: u64,
    /// When it left.
    sent_ns: u64,
    /// Due in the measuring window (after the warm-up): timed and counted.
    counted: bool,
    flight: Flight,
}

/// Open loop's book of one stream: request `seq` sits in slot `seq % len` of a ring of
/// `max_outstanding` slots (allocated before the clock starts), so a request finds its answer
/// by its number, whatever order the answers come in; and what became of the requests.
struct InFlight {
    slots: Vec<Slot>,
    /// The next request's number.
    next: u64,
    /// Every request before this one is answered or given up (where expiry looks next).
    oldest: u64,
    /// TCP: the request the next answer is for (TCP answers in order).
    answered: u64,
    waiting: u64,
    timeout_ns: u64,
    /// Round trips from the scheduled moment (the figures), and from the actual send.
    rtt: Histogram<u64>,
    rtt_from_send: Histogram<u64>,
    sent: u64,
    not_sent: u64,
    lost: u64,
    stale: u64,
    /// Every request's times and fate, when the stream keeps them (a probe session).
    record: Option<Arc<ProbeRecord>>,
}

impl InFlight {
    fn new(max_outstanding: u64, timeout_ns: u64, record: Option<Arc<ProbeRecord>>) -> InFlight {
        InFlight {
            slots: vec![Slot::default(); max_outstanding.max(1) as usize],
            next: 0,
            oldest: 0,
            answered: 0,
            waiting: 0,
            timeout_ns,
            rtt: histogram(),
            rtt_from_send: histogram(),
            sent: 0,
            not_sent: 0,
            lost: 0,
            stale: 0,
            record,
        }
    }

    fn slot(&mut self, seq: u64) -> &mut Slot {
        let n = self.slots.len() as u64;
        &mut self.slots[(seq % n) as usize]
    }

    /// Whether the next request has a slot: fewer than `max_outstanding` in flight before it.
    fn has_room(&mut self) -> bool {
        let next = self.next;
        self.slot(next).flight == Flight::Free
    }

    /// The next request left at `now_ns`, due at `due_ns`.
    fn launch(&mut self, due_ns: u64, now_ns: u64, counted: bool) {
        let seq = self.next;
        *self.slot(seq) = Slot {
            seq,
            due_ns,
            sent_ns: now_ns,
            counted,
            flight: Flight::Waiting,
        };
        self.next += 1;
        self.waiting += 1;
        self.sent += u64::from(counted);
        if let Some(r) = &self.record {
            r.sent(seq, now_ns);
        }
    }

    /// The answer to request `seq` came at `now_ns`: timed when it was waiting, stale when it
    /// came after its timeout (or answers nothing in flight). `far_unix_ns`: the far end's stamp
    /// in the answer, when it carries one.
    fn answer(&mut self, seq: u64, now_ns: u64, far_unix_ns: Option<i64>) {
        let s = *self.slot(seq);
        if s.seq != seq || s.flight == Flight::Free || seq >= self.next {
            self.stale += 1;
            return;
        }
        let late = now_ns >= s.due_ns.saturating_add(self.timeout_ns);
        if s.flight == Flight::Waiting && late {
            // Past its timeout before expiry saw it: lost, and its answer stale, as if it had.
            self.waiting -= 1;
            self.lost += u64::from(s.counted);
            self.stale += u64::from(s.counted);
            if let Some(r) = &self.record {
                r.lost(seq);
            }
        } else if s.flight == Flight::Waiting {
            self.waiting -= 1;
            if let Some(r) = &self.record {
                r.answered(seq, now_ns, far_unix_ns);
            }
            if s.counted {
                let _ = self.rtt.record(now_ns.saturating_sub(s.due_ns).clamp(1, HIST_MAX_NS));
                let _ = self
                    .rtt_from_send
                    .record(now_ns.saturating_sub(s.sent_ns).clamp(1, HIST_MAX_NS));
            }
        } else if s.counted {
            self.stale += 1;
        }
        self.slot(seq).flight = Flight::Free;
    }

    /// Gives up the requests whose timeout (from their scheduled moment) has passed at `now_ns`:
    /// each counts as lost. UDP frees the slot (an answer after it is stale); TCP keeps it until
    /// its answer comes in order.
    fn expire(&mut self, now_ns: u64, tcp: bool) {
        while self.oldest < self.next {
            let (seq, timeout_ns) = (self.oldest, self.timeout_ns);
            let s = self.slot(seq);
            if s.seq == seq && s.flight == Flight::Waiting {
                if now_ns < s.due_ns.saturating_add(timeout_ns) {
                    break;
                }
                s.flight = if tcp { Flight::Overdue } else { Flight::Free };
                let counted = s.counted;
                self.waiting -= 1;
                self.lost += u64::from(counted);
                if let Some(r) = &self.record {
                    r.lost(seq);
                }
            }
            self.oldest += 1;
        }
    }

    /// When the oldest request waiting times out, ns since time zero (right after `expire`).
    fn next_expiry(&mut self) -> Option<u64> {
        let (seq, timeout_ns) = (self.oldest, self.timeout_ns);
        (seq < self.next).then(|| self.slot(seq).due_ns.saturating_add(timeout_ns))
    }
}

/// The request number an answer carries in its first `tag.len()` bytes (at most 8): with fewer,
/// the low bytes of it, read as the newest request below `next` that ends in them. None when
/// no request sent could carry it.
fn number_of(tag: &[u8], next: u64) -> Option<u64> {
    if tag.is_empty() {
        return None;
    }
    let mut b = [0u8; 8];
    b[..tag.len()].copy_from_slice(tag);
    let t = u64::from_le_bytes(b);
    let newest = next.checked_sub(1)?;
    if tag.len() >= 8 {
        return (t <= newest).then_some(t);
    }
    let mask = (1u64 << (8 * tag.len())) - 1;
    let back = newest.wrapping_sub(t) & mask;
    newest.checked_sub(back)
}

fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted
}

/// Waits until `fd` is readable (or writable, with `write`) or `ns` have passed.
fn wait_for(fd: std::os::fd::RawFd, write: bool, ns: u64) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one pollfd on the stack and a timespec, both valid for the call; no signal mask.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
}

/// One asking stream in the open loop (`--tps`, TCP or UDP without `--connect`): requests leave
/// on their schedule (request i at i / rate) whatever is outstanding, up to `max_outstanding`
/// in flight (a request due when that many are out, or while TCP still writes the one before,
/// is not sent and counted so); answers are matched to their requests by number (UDP: the
/// number the answer echoes; TCP: the order, which TCP keeps) and timed from the scheduled
/// moment (no coordinated omission, as wrk2) and from the send. A request unanswered within
/// the timeout of its moment is lost; an answer after that is stale. After the last request the
/// stream waits for the answers still out, at most the timeout. One thread: the socket is
/// non-blocking, the wait a ppoll(2) until the next request is due or an answer comes, spun
/// for the last [`SPIN`].
///
/// Long on purpose: what remains is the per-request loop (send on schedule, read, match, time,
/// wait) as one body, so that nothing on a request's path is a call the compiler may not inline
/// and each step sees the loop's state without passing it; its setup and its report are apart.
pub(super) fn ask_open(run: StreamRun<'_, '_>, idx: usize, s: &RrStream) -> RrStreamReport {
    let (spec, deadlines, shared, gate) = (run.spec, run.deadlines, run.shared, run.gate);
    let (req, resp, mut request, mut buf) = ask_buffers(spec);
    let (tcp, udp, fd) = nonblocking(&s.socket);
    let tag_bytes = req.min(resp).min(8);
    let max_outstanding = outstanding_cap(spec.max_outstanding, udp.is_some(), tag_bytes);
    let mut book = InFlight::new(
        max_outstanding,
        u64::from(spec.timeout_ms) * 1_000_000,
        s.record.clone(),
    );
    // A probe session's answers carry the far end's stamp after the number.
    let stamped = spec.stamp && s.record.is_some() && resp >= 16;
    let mut far = [0u8; 8];
    let gap_ns = spec.gap_ns().unwrap_or(1);
    let (limit, deadline_ns) = (deadlines.count(), deadlines.deadline_ns());
    let warmup_ns = deadlines.measure_window().0.as_nanos() as u64;
    let counter = &shared.counters[idx];
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared.t0.get().expect("time zero is set before the gate opens");
    if let Some(r) = &s.record {
        r.set_zero(start);
    }
    let mut pacer = Pacer::new(start, gap_ns);
    // The schedule's next place, and TCP's partial write of the newest request and partial
    // read of the next answer, bytes.
    let (mut place, mut written, mut got) = (0u64, None::<usize>, 0usize);
    let (mut requests, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    let (mut sending, mut why) = (true, StreamEnd::Deadline);
    // The per-request loop: long because it is the hot path. Sending a burst, finishing a
    // partial TCP write, reading every answer that came and sleeping to the next moment share
    // a dozen counters and leave the loop from inside each other (`break 'run`); split into
    // functions they would pass them all back and forth on every request.
    let end = 'run: loop {
        let Some(fd) = fd else {
            errors += 1;
            break StreamEnd::Error;
        };
        if shared.control.aborted() {
            break StreamEnd::Stopped;
        }
        let now = start.elapsed().as_nanos() as u64;
        if sending && shared.control.sending_stopped() {
            (sending, why) = (false, StreamEnd::Stopped);
        }
        // At most BURST requests before the answers are read: a stream far behind its schedule
        // (a stall, a rate above what one thread sends) still times the answers as they come.
        let mut burst = 0;
        while sending && burst < BURST {
            burst += 1;
            let due = place * gap_ns;
            if limit.is_some_and(|l| place >= l) {
                (sending, why) = (false, StreamEnd::Count);
            } else if deadline_ns.is_some_and(|d| due >= d) {
                (sending, why) = (false, StreamEnd::Deadline);
            }
            if !sending || due > now {
                break;
            }
            place += 1;
            let counted = due >= warmup_ns;
            if written.is_some() || !book.has_room() {
                book.not_sent += u64::from(counted);
                continue;
            }
            tag(&mut request, book.next);
            let r = match (tcp, udp) {
                (Some(mut t), _) => t.write(&request),
                (_, Some(u)) => u.send(&request),
                _ => Ok(0),
            };
            match r {
                Ok(n) => {
                    written = (n < req).then_some(n);
                    book.launch(due, now, counted);
                    pacer.sent(1, now);
                    requests += 1;
                    bytes += req as u64;
                }
                Err(e) if would_block(&e) => book.not_sent += u64::from(counted),
                // A datagram of this stream was refused earlier (ICMP): this one is not sent.
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    errors += 1;
                    book.not_sent += u64::from(counted);
                }
                Err(_) => {
                    errors += 1;
                    break 'run StreamEnd::Error;
                }
            }
        }
        if let (Some(p), Some(mut t)) = (written, tcp) {
            match t.write(&request[p..]) {
                Ok(n) => written = (p + n < req).then_some(p + n),
                Err(e) if would_block(&e) => {}
                Err(_) => {
                    errors += 1;
                    break StreamEnd::Error;
                }
            }
        }
        loop {
            let r = match (tcp, udp) {
                (Some(mut t), _) => t.read(&mut buf),
                (_, Some(u)) => u.recv(&mut buf),
                _ => Ok(0),
            };
            match r {
                Ok(0) if tcp.is_some() => {
                    // The far end closed (or the guard shut the socket at the stop).
                    let over = shared.control.aborted() || shared.control.sending_stopped();
                    if !over && (sending || book.waiting > 0) {
                        errors += 1;
                        break 'run StreamEnd::Error;
                    }
                    break 'run if over { StreamEnd::Stopped } else { why };
                }
                Ok(n) => {
                    let at = start.elapsed().as_nanos() as u64;
                    if tcp.is_some() {
                        // Answers in order, each `resp` bytes, in pieces of any size.
                        let mut off = 0;
                        while off < n {
                            let take = (resp - got).min(n - off);
                            if stamped {
                                gather_stamp(&mut far, got, &buf[off..off + take]);
                            }
                            (got, off) = (got + take, off + take);
                            if got == resp {
                                got = 0;
                                let seq = book.answered;
                                book.answer(seq, at, stamped.then(|| i64::from_le_bytes(far)));
                                book.answered += 1;
                            }
                        }
                    } else {
                        match number_of(&buf[..n.min(tag_bytes)], book.next) {
                            Some(seq) => book.answer(seq, at, if stamped { stamp_of(&buf[..n]) } else { None }),
                            None => book.stale += 1,
                        }
                    }
                    bytes += n as u64;
                }
                Err(e) if would_block(&e) || e.raw_os_error() == Some(libc::ECONNREFUSED) => break,
                Err(_) if shared.control.aborted() || shared.control.sending_stopped() => {
                    break 'run StreamEnd::Stopped;
                }
                Err(_) => {
                    errors += 1;
                    break 'run StreamEnd::Error;
                }
            }
        }
        counter.ops.store(requests, Relaxed);
        counter.bytes.store(bytes, Relaxed);
        book.expire(now, tcp.is_some());
        if !sending && book.waiting == 0 && written.is_none() {
            break why;
        }
        // Sleep until the next request is due, the oldest one out times out, or an answer
        // comes; spin the last stretch before a request (a sleep's wake-up is late).
        let due = sending.then(|| (place * gap_ns).min(deadline_ns.unwrap_or(u64::MAX)));
        let wake = match (due, book.next_expiry()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(now),
        };
        let left = wake.saturating_sub(now).min(POLL.as_nanos() as u64);
        let spin = SPIN.as_nanos() as u64;
        if left > spin {
            wait_for(fd, written.is_some(), left - spin);
        } else {
            std::hint::spin_loop();
        }
    };
    counter.ops.store(requests, Relaxed);
    counter.bytes.store(bytes, Relaxed);
    counter.other_errors.store(errors, Relaxed);
    if end == StreamEnd::Deadline {
        shared.deadline_hit.store(true, Relaxed);
    }
    if let Some(t) = tcp {
        let _ = t.shutdown(std::net::Shutdown::Write);
    }
    shared.finish(idx, end);
    open_report(spec, &book, errors, &pacer, max_outstanding)
}

/// The stream's socket as the open loop uses it: TCP or UDP, non-blocking, and its descriptor
/// for ppoll(2). No descriptor when it could not be made non-blocking: the stream then ends at
/// once, as an error.
fn nonblocking(socket: &RrSocket) -> (Option<&TcpStream>, Option<&UdpSocket>, Option<RawFd>) {
    let (tcp, udp) = match socket {
        RrSocket::Tcp(t) => (Some(t), None),
        RrSocket::Udp(u) => (None, Some(u)),
        _ => (None, None),
    };
    let made = tcp
        .map(|t| t.set_nonblocking(true))
        .or(udp.map(|u| u.set_nonblocking(true)));
    let fd = raw_fd(socket)
        .map(|f| f.as_raw_fd())
        .filter(|_| matches!(made, Some(Ok(()))));
    (tcp, udp, fd)
}

/// The most requests one stream keeps in flight: the spec's bound, and for UDP with fewer than
/// 8 tag bytes at most half their range (answers echo the request's first bytes, at most 8: with
/// fewer, the number is told from its low bytes).
fn outstanding_cap(max_outstanding: u32, udp: bool, tag_bytes: usize) -> u64 {
    let max = u64::from(max_outstanding);
    if udp && tag_bytes < 8 {
        max.min(1 << (8 * tag_bytes - 1))
    } else {
        max
    }
}

/// The stream's report from its book, its errors and its pacing.
fn open_report(spec: &RrSpec, book: &InFlight, errors: u64, pacer: &Pacer, max_outstanding: u64) -> RrStreamReport {
    RrStreamReport {
        transactions: book.rtt.len(),
        lost: book.lost,
        stale: book.stale,
        errors,
        latency_histogram: hex(&book.rtt),
        connect_histogram: None,
        requested_rate: spec.rate,
        achieved_spacing_us: Some(pacer.spacing().mean_us),
        open_loop: Some(OpenLoopReport {
            requests_sent: book.sent,
            requests_not_sent: book.not_sent,
            max_outstanding: max_outstanding as u32,
            latency_from_send_histogram: hex(&book.rtt_from_send),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_with_short_tags_keeps_at_most_half_their_range_in_flight() {
        assert_eq!(outstanding_cap(1024, true, 1), 128, "one tag byte: 2^7");
        assert_eq!(outstanding_cap(1024, true, 2), 1024, "2^15 is over the bound");
        assert_eq!(outstanding_cap(100_000, true, 2), 32_768);
        assert_eq!(outstanding_cap(1024, true, 8), 1024, "a whole number: the bound");
        assert_eq!(outstanding_cap(1024, false, 1), 1024, "TCP answers in order");
    }

    /// Open-loop answers find their requests by number whatever order they come in;
    /// a request unanswered past its timeout is lost and its later answer stale; numbers carried
    /// in fewer than 8 bytes are read back as the newest request that ends in them.
    #[test]
    fn issue_23_open_loop_matches_answers_by_number() {
        let ms = 1_000_000;
        let mut b = InFlight::new(8, 10 * ms, None);
        for i in 0..4 {
            assert!(b.has_room());
            b.launch(i * ms, i * ms + 5, true);
        }
        // Answers to 2, 0 and 3 come in that order; 1 never does.
        b.answer(2, 3 * ms, None);
        b.answer(0, 4 * ms, None);
        b.answer(3, 5 * ms, None);
        b.expire(6 * ms, false);
        assert_eq!((b.waiting, b.lost), (1, 0), "1 is still within its timeout");
        b.expire(11 * ms, false);
        assert_eq!((b.waiting, b.lost, b.stale), (0, 1, 0));
        b.answer(1, 12 * ms, None);
        assert_eq!(b.stale, 1, "an answer after the timeout is stale");
        assert_eq!(b.rtt.len(), 3);
        // Timed from the moment due: request 0, due at 0, answered at 4 ms.
        assert!(b.rtt.value_at_quantile(0.5) >= ms && b.rtt_from_send.min() < ms);
        // A full ring: the next request has no room until the oldest is answered.
        let mut c = InFlight::new(2, 10 * ms, None);
        c.launch(0, 0, true);
        c.launch(ms, ms, true);
        assert!(!c.has_room());
        c.answer(0, 2 * ms, None);
        assert!(c.has_room());
        // TCP: an overdue request keeps its slot until its answer comes, in order.
        let mut t = InFlight::new(4, ms, None);
        t.launch(0, 0, true);
        t.expire(2 * ms, true);
        assert_eq!((t.lost, t.waiting), (1, 0));
        t.launch(3 * ms, 3 * ms, true);
        t.answer(0, 4 * ms, None);
        t.answer(1, 3 * ms + 500_000, None);
        assert_eq!((t.stale, t.rtt.len()), (1, 1));
        // Numbers from their low bytes.
        assert_eq!(number_of(&[5], 300), Some(261));
        assert_eq!(number_of(&[44, 1], 301), Some(300));
        assert_eq!(
            number_of(&[45, 1], 300),
            None,
            "301 is not sent yet, and nothing before ends so"
        );
        assert_eq!(number_of(&7u64.to_le_bytes(), 300), Some(7));
        assert_eq!(number_of(&300u64.to_le_bytes(), 300), None, "not sent yet");
        assert_eq!(number_of(&[1], 0), None);
        assert_eq!(number_of(&[], 9), None);
    }
}
