//! Pre-posted buffers (NTttcp's `-a`): `depth` sends or receives kept in flight on every stream
//! through io_uring, so the kernel always has a buffer to fill or drain.
//!
//! Memory safety rests on one rule: the kernel may write into a receive buffer (or read a send
//! buffer) until its completion arrives, so the worker drains every in-flight operation before its
//! buffers are freed; if that fails even after shutting the sockets, the buffers are leaked.

use super::stream::WorkerStream;
use crate::engine::run::{Shared, is_reset};
use crate::result::{Role, StreamEnd};
use io_uring::{IoUring, opcode, types};
use std::io;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// After senders are told to stop, how long in-flight sends may take before the socket is shut.
const SEND_GRACE: Duration = Duration::from_secs(2);

pub(super) struct Worker {
    ring: IoUring,
    depth: usize,
    len: usize,
    /// One buffer per (stream, slot); sends all read the first one of their stream.
    bufs: Vec<Vec<u8>>,
}

#[derive(Default, Clone)]
struct State {
    bytes: u64,
    ops: u64,
    inflight: usize,
    /// Buffers started (count mode stops starting new ones at the count).
    started: u64,
    /// Set once nothing more is submitted; the stream finishes when inflight reaches 0.
    closing: Option<StreamEnd>,
    closing_at: Option<Instant>,
    shut: bool,
    finished: bool,
    /// Bytes already sent of each slot's current buffer.
    offs: Vec<usize>,
}

impl Worker {
    pub fn new(mine: &[WorkerStream<'_>], depth: usize, len: usize) -> io::Result<Worker> {
        let entries = (mine.len() * depth).next_power_of_two().clamp(8, 32_768) as u32;
        let ring = IoUring::new(entries)?;
        let bufs = (0..mine.len() * depth)
            .map(|_| (0..len).map(|i| i as u8).collect())
            .collect();
        Ok(Worker { ring, depth, len, bufs })
    }

    fn push(&mut self, i: usize, slot: usize, s: &WorkerStream<'_>, off: usize) {
        let fd = types::Fd(s.socket.as_raw_fd());
        let buf = &mut self.bufs[i * self.depth + slot];
        let len = (self.len - off) as u32;
        let entry = match s.role {
            // SAFETY (both arms): the buffer lives in `self.bufs` until `run` has drained every
            // completion (or leaks it), and is not touched by us while in flight.
            Role::Send => opcode::Send::new(fd, buf[off..].as_ptr(), len).build(),
            Role::Receive => opcode::Recv::new(fd, buf.as_mut_ptr(), self.len as u32).build(),
        }
        .user_data(((i as u64) << 32) | slot as u64);
        // SAFETY: see above; the entry points into memory that outlives its completion.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // Queue full: hand what is queued to the kernel and retry.
            let _ = self.ring.submit();
        }
    }

    pub fn run(&mut self, mine: &[WorkerStream<'_>], shared: &Shared<'_>) {
        let mut st: Vec<State> = vec![
            State {
                offs: vec![0; self.depth],
                ..Default::default()
            };
            mine.len()
        ];
        for (i, s) in mine.iter().enumerate() {
            for slot in 0..self.depth {
                if s.role == Role::Send && shared.count.is_some_and(|c| st[i].started >= c) {
                    break;
                }
                self.push(i, slot, s, 0);
                st[i].inflight += 1;
                st[i].started += 1;
            }
        }
        let wait = types::Timespec::from(Duration::from_millis(100));
        let args = types::SubmitArgs::new().timespec(&wait);
        let mut done: Vec<(u64, i32)> = Vec::with_capacity(self.ring.params().cq_entries() as usize);
        loop {
            let control = shared.control;
            for (i, s) in mine.iter().enumerate() {
                let state = &mut st[i];
                if state.finished {
                    continue;
                }
                if state.closing.is_none() {
                    if control.aborted() {
                        state.closing = Some(StreamEnd::Stopped);
                    } else if s.role == Role::Send && control.sending_stopped() {
                        state.closing = Some(shared.stop_reason());
                    } else if s.role == Role::Send && shared.count.is_some_and(|c| state.ops >= c) {
                        state.closing = Some(StreamEnd::Count);
                    }
                    if state.closing.is_some() {
                        state.closing_at = Some(Instant::now());
                    }
                }
                if state.closing.is_some() && state.inflight > 0 && !state.shut {
                    // Receivers being stopped, or senders whose peer stopped reading, would keep
                    // their operations pending forever: shutting the socket completes them.
                    let overdue = state.closing_at.is_some_and(|t| t.elapsed() >= SEND_GRACE);
                    if control.aborted() || overdue {
                        let _ = s.socket.shutdown(Shutdown::Both);
                        state.shut = true;
                    }
                }
                if let Some(end) = state.closing
                    && state.inflight == 0
                {
                    if s.role == Role::Send {
                        let _ = s.socket.shutdown(Shutdown::Write);
                    }
                    state.finished = true;
                    shared.finish(s.idx, end);
                }
            }
            if st.iter().all(|s| s.finished) {
                break;
            }
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
                    ) => {}
                Err(_) => {
                    // The ring itself failed: nothing more will complete, and the kernel may
                    // still hold pointers into the buffers. End every stream and leak the
                    // buffers rather than free memory the kernel could write.
                    control.abort();
                    for (i, s) in mine.iter().enumerate() {
                        if !st[i].finished {
                            let _ = s.socket.shutdown(Shutdown::Both);
                            shared.finish(s.idx, StreamEnd::Error);
                        }
                    }
                    std::mem::forget(std::mem::take(&mut self.bufs));
                    return;
                }
            }
            done.clear();
            done.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            for &(ud, res) in &done {
                let (i, slot) = ((ud >> 32) as usize, (ud & 0xffff_ffff) as usize);
                let s = &mine[i];
                let c = &shared.counters[s.idx];
                let state = &mut st[i];
                state.inflight -= 1;
                if res < 0 && matches!(-res, libc::EINTR | libc::EAGAIN) && state.closing.is_none() {
                    // Interrupted before anything moved: post the same operation again.
                    let off = if s.role == Role::Send { state.offs[slot] } else { 0 };
                    self.push(i, slot, s, off);
                    state.inflight += 1;
                    continue;
                }
                if res < 0 {
                    let e = io::Error::from_raw_os_error(-res);
                    if state.closing.is_none() {
                        shared.count_error(s.idx, &e);
                        state.closing = Some(StreamEnd::Error);
                        state.closing_at = Some(Instant::now());
                        if is_reset(&e) {
                            state.shut = true;
                        }
                    }
                    continue;
                }
                let k = res as usize;
                if s.role == Role::Receive && k == 0 {
                    if state.closing.is_none() {
                        state.closing = Some(StreamEnd::Eof);
                        state.closing_at = Some(Instant::now());
                    }
                    continue;
                }
                state.bytes += k as u64;
                c.bytes.store(state.bytes, Relaxed);
                let mut off = 0;
                if s.role == Role::Send {
                    state.offs[slot] += k;
                    if state.offs[slot] < self.len {
                        off = state.offs[slot];
                    } else {
                        state.offs[slot] = 0;
                        state.ops += 1;
                        c.ops.store(state.ops, Relaxed);
                    }
                } else {
                    state.ops += 1;
                    c.ops.store(state.ops, Relaxed);
                }
                // A partly sent buffer is always finished, so count mode moves whole buffers.
                let more = state.closing.is_none()
                    && (off > 0 || s.role == Role::Receive || shared.count.is_none_or(|n| state.started < n));
                if more || (off > 0 && !state.shut) {
                    if off == 0 && s.role == Role::Send {
                        state.started += 1;
                    }
                    self.push(i, slot, s, off);
                    state.inflight += 1;
                }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // `run` returns only with nothing in flight; if it never ran to the end (a panic), the
        // kernel may still hold pointers into the buffers: leak them rather than free them.
        let bufs = std::mem::take(&mut self.bufs);
        if std::thread::panicking() {
            std::mem::forget(bufs);
        }
    }
}
