//! The sending end of a UDP stream: datagrams paced at the spec's gap, or as fast as the kernel
//! takes them in UDP GSO trains (UDP_SEGMENT) or sendmmsg batches; then three end markers.
//!
//! In: a configured socket, the spec, the run's shared counters. Out: a [`UdpSendReport`], and
//! whether GSO had to be turned off at send time (the run notes it once for all streams).

use super::batch::Batch;
use super::header::{HEADER_BYTES, Header, KIND_DATA, KIND_END, realtime_ns, write_header};
use super::{BATCH, GSO_MAX_BYTES, StreamRun, UdpStream};
use crate::engine::pacing::{self, Pacer};
use crate::engine::sockopt::{disable_gso, enable_gso};
use crate::result::{StreamEnd, UdpSendReport};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::thread;
use std::time::Duration;

/// What a sender does after a failed send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterError {
    /// Interrupted: send again at once.
    Retry,
    /// A full queue (qdisc or socket): yield a moment and send again.
    Wait,
    /// The peer's port answered ICMP unreachable (not listening yet, or gone): counted, and the
    /// stream goes on.
    Count,
    /// A GSO train the kernel or the driver refused at send time, though it took UDP_SEGMENT
    /// (EIO: no checksum offload on the way out; EINVAL: a segment it cannot build): GSO off,
    /// and the train goes again as plain datagrams.
    DropGso,
    /// Anything else ends the stream.
    End,
}

/// The rule for a failed send with `errno`, GSO on or off.
fn after_error(errno: Option<i32>, gso: bool) -> AfterError {
    match errno {
        Some(libc::EINTR) => AfterError::Retry,
        Some(libc::ENOBUFS) | Some(libc::EAGAIN) => AfterError::Wait,
        Some(libc::ECONNREFUSED) => AfterError::Count,
        Some(libc::EIO) | Some(libc::EINVAL) if gso => AfterError::DropGso,
        _ => AfterError::End,
    }
}

/// What a sender hands back: its report and, when GSO failed at send time and was turned off,
/// the errno that made it.
pub(super) struct Sent {
    pub report: UdpSendReport,
    pub gso_dropped: Option<i32>,
}

/// Datagrams one send call carries: a GSO train's worth (at most [`BATCH`]) or a sendmmsg batch
/// as fast as possible; a batch where the gap is too short to keep one call per datagram on
/// time; otherwise one.
fn per_call(gap_ns: u64, gso: bool, size: usize) -> usize {
    if gap_ns == 0 {
        if gso {
            (GSO_MAX_BYTES / size).clamp(1, BATCH)
        } else {
            BATCH
        }
    } else if gap_ns < pacing::MIN_UNBATCHED_GAP_NS {
        BATCH
    } else {
        1
    }
}

/// End markers: the count, three times, a millisecond apart (one survives 1 % loss 10^6 times
/// out of 10^6). iperf3's framing has none: its control connection ends the test.
fn send_end_markers(s: &UdpStream, seq: u64) {
    let mut marker = [0u8; HEADER_BYTES];
    let markers = if s.framing == super::Framing::Linerate { 3 } else { 0 };
    for _ in 0..markers {
        write_header(
            &mut marker,
            &Header {
                stream: s.wire_id,
                kind: KIND_END,
                seq,
                send_ns: realtime_ns(),
                test_id: s.test_id,
            },
        );
        let _ = s.socket.send(&marker);
        thread::sleep(Duration::from_millis(1));
    }
}

/// One sending stream: paced or as fast as possible, then the end markers. Its setup
/// ([`per_call`], `Batch::new`) and its end ([`send_end_markers`]) are apart; the send loop
/// stays whole here: it is the per-datagram hot path (a header written per datagram, one
/// syscall per batch), its error rules leave it by `continue` or by `break` with the stream's
/// end, and it keeps its counts in locals, stored to the shared counters once per batch.
pub(super) fn send_stream(run: StreamRun<'_, '_>, idx: usize, s: &UdpStream) -> Sent {
    let (spec, deadlines, shared, gate) = (run.spec, run.deadlines, run.shared, run.gate);
    let size = spec.payload_bytes as usize;
    let (limit, deadline_ns) = (deadlines.count(), deadlines.deadline_ns());
    // A GSO train as fast as possible; one datagram at a time when paced.
    let mut gso = spec.gap_ns == 0 && size <= usize::from(u16::MAX) && enable_gso(&s.socket, size as u16);
    let per_call = per_call(spec.gap_ns, gso, size);
    // Touched before the clock starts: a byte pattern, headers written per send.
    let mut batch = Batch::new(size, per_call, 0);
    let fd = s.socket.as_raw_fd();
    let counter = &shared.counters[idx];
    gate.arrive_and_wait(&shared.sampler);
    let start = *shared
        .t0
        .get()
        .expect("the sampler set time zero before opening the gate");
    let mut pacer = Pacer::new(start, spec.gap_ns);
    let mut seq = 0u64;
    let mut errors = 0u64;
    let mut full_queue_retries = 0u64;
    let mut gso_dropped = None;
    // CLOCK_REALTIME of the first and last batch sent: the sender's own window.
    let mut first_send_ns: Option<u64> = None;
    let mut last_send_ns = 0u64;
    let end = loop {
        if shared.control.aborted() || shared.control.sending_stopped() {
            break StreamEnd::Stopped;
        }
        let remaining = limit.map_or(u64::MAX, |l| l - seq);
        if remaining == 0 {
            break StreamEnd::Count;
        }
        let due = pacer.wait((per_call as u64).min(remaining), deadline_ns);
        let now = start.elapsed().as_nanos() as u64;
        if due == 0 || deadline_ns.is_some_and(|d| now >= d) {
            break StreamEnd::Deadline;
        }
        let k = due as usize;
        let send_ns = realtime_ns();
        for i in 0..k {
            let h = Header {
                stream: s.wire_id,
                kind: KIND_DATA,
                seq: seq + i as u64,
                send_ns,
                test_id: s.test_id,
            };
            s.framing.write(&mut batch.buf[i * size..(i + 1) * size], &h);
        }
        // Buffers, iovecs and headers were set up in `batch` and outlive the calls; k <= per_call
        // (the pacer hands out at most `per_call`, and the header loop above slices `buf` for
        // k datagrams, bounds-checked), so the lengths are within them.
        let sent = if k == 1 || gso {
            // SAFETY: `buf` holds per_call * size >= k * size bytes; `fd` is our open socket.
            let rc = unsafe { libc::send(fd, batch.buf.as_ptr().cast(), k * size, 0) };
            if rc < 0 { -1 } else { k as isize }
        } else {
            // SAFETY: `msgs` holds per_call >= k headers, each pointing at one `iov` entry that
            // points at `size` bytes of `buf`; none of the three is resized after setup
            // (`Batch::new`), and moving the batch moves no element.
            let rc = unsafe { libc::sendmmsg(fd, batch.msgs.as_mut_ptr(), k as libc::c_uint, 0) };
            rc as isize
        };
        if sent <= 0 {
            let errno = std::io::Error::last_os_error().raw_os_error();
            match after_error(errno, gso) {
                AfterError::Retry => continue,
                AfterError::Wait => {
                    full_queue_retries += 1;
                    thread::yield_now();
                    continue;
                }
                AfterError::Count => {
                    errors += 1;
                    continue;
                }
                AfterError::DropGso if disable_gso(&s.socket) => {
                    gso = false;
                    gso_dropped = errno;
                    continue;
                }
                AfterError::DropGso | AfterError::End => {
                    errors += 1;
                    counter.other_errors.store(errors, Relaxed);
                    break StreamEnd::Error;
                }
            }
        }
        let sent = sent as u64;
        first_send_ns.get_or_insert(send_ns);
        last_send_ns = send_ns;
        pacer.sent(sent, now);
        seq += sent;
        counter
            .bytes
            .store(counter.bytes.load(Relaxed) + sent * size as u64, Relaxed);
        counter.ops.store(seq, Relaxed);
    };
    if end == StreamEnd::Deadline {
        shared.deadline_hit.store(true, Relaxed);
    }
    send_end_markers(s, seq);
    counter.other_errors.store(errors, Relaxed);
    shared.finish(idx, end);
    Sent {
        report: UdpSendReport {
            datagrams: seq,
            spacing: pacer.spacing(),
            gso,
            errors,
            full_queue_retries,
            first_send_unix_ns: first_send_ns,
            last_send_unix_ns: first_send_ns.map(|_| last_send_ns),
        },
        gso_dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_carries_a_train_a_batch_or_one_datagram() {
        assert_eq!(per_call(0, false, 1400), BATCH);
        assert_eq!(per_call(0, true, 1400), (GSO_MAX_BYTES / 1400).clamp(1, BATCH));
        assert_eq!(
            per_call(0, true, GSO_MAX_BYTES * 2),
            1,
            "a datagram past a train is a train"
        );
        assert_eq!(per_call(0, true, 1), BATCH, "a train is at most a batch");
        assert_eq!(per_call(pacing::MIN_UNBATCHED_GAP_NS - 1, false, 1400), BATCH);
        assert_eq!(per_call(pacing::MIN_UNBATCHED_GAP_NS, false, 1400), 1);
        assert_eq!(per_call(1_000_000, true, 1400), 1, "paced: GSO plays no part");
    }

    #[test]
    fn a_gso_train_refused_at_send_time_falls_back() {
        assert_eq!(after_error(Some(libc::EIO), true), AfterError::DropGso);
        assert_eq!(after_error(Some(libc::EINVAL), true), AfterError::DropGso);
        // Without GSO the same errors end the stream, as any other.
        assert_eq!(after_error(Some(libc::EIO), false), AfterError::End);
        assert_eq!(after_error(Some(libc::EINVAL), false), AfterError::End);
        assert_eq!(after_error(Some(libc::EINTR), true), AfterError::Retry);
        assert_eq!(after_error(Some(libc::ENOBUFS), true), AfterError::Wait);
        assert_eq!(after_error(Some(libc::ECONNREFUSED), false), AfterError::Count);
        assert_eq!(after_error(Some(libc::EPERM), true), AfterError::End);
    }
}
