//! Several TCP streams on one worker: non-blocking sockets driven from one epoll(7) loop.
//!
//! In: a worker's streams (connected sockets, each sending or receiving), one send buffer and
//! one receive buffer for all of them (the bytes are never inspected, so streams share them),
//! and the run's [`Shared`] counters and flags. Out: the same counters the blocking path keeps
//! (bytes, ops, errors by kind) and one [`Shared::finish`] per stream, with the same ends:
//! `Count`, `Eof`, `Error`, or the stop reason when the sampler or a user stops the run.
//! Opening, tuning and pinning are left to the caller; the loop allocates, locks and formats
//! nothing, and sees `stop_send` / `abort` within [`POLL_SLICE`] (the epoll_wait timeout).

use super::WorkerStream;
use crate::engine::run::Shared;
use crate::engine::sockopt::POLL_SLICE;
use crate::result::{Role, StreamEnd};
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;

/// What the loop keeps of one stream.
#[derive(Clone, Copy, Default)]
struct State {
    bytes: u64,
    /// Whole buffers written or reads done.
    ops: u64,
    /// Bytes already written of the current send buffer.
    off: usize,
    open: bool,
}

/// An epoll instance with the worker's streams registered, and room for one event per stream.
pub(super) struct EventLoop {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
    streams: Vec<State>,
}

impl EventLoop {
    /// Makes the sockets non-blocking and registers them, before the clock starts.
    ///
    /// Level-triggered, not edge-triggered: the loop does one read or write per ready stream per
    /// wake-up so that a fast stream cannot starve the others, and a stream still ready after
    /// that one call must be reported again by the next epoll_wait. Edge-triggered would only
    /// report it again after a call hit EAGAIN, so the loop would have to keep its own list of
    /// streams left ready; level-triggered lets the kernel keep that list.
    pub fn new(mine: &[WorkerStream<'_>]) -> io::Result<EventLoop> {
        // SAFETY: epoll_create1 takes no pointers; a non-negative result is a new descriptor
        // that nothing else owns.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by epoll_create1 and is owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        for (i, s) in mine.iter().enumerate() {
            s.socket.set_nonblocking(true)?;
            let mut ev = libc::epoll_event {
                events: match s.role {
                    Role::Send => libc::EPOLLOUT,
                    Role::Receive => libc::EPOLLIN | libc::EPOLLRDHUP,
                } as u32,
                u64: i as u64,
            };
            // SAFETY: both descriptors are open for the call and `ev` is a valid epoll_event.
            let rc = unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, s.socket.as_raw_fd(), &mut ev) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(EventLoop {
            epoll,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; mine.len().max(1)],
            streams: vec![
                State {
                    open: true,
                    ..State::default()
                };
                mine.len()
            ],
        })
    }

    /// Drives every stream to its end: one call per ready stream per epoll_wait.
    pub fn run(&mut self, mine: &[WorkerStream<'_>], send_buf: &[u8], recv_buf: &mut [u8], shared: &Shared<'_>) {
        let control = shared.control;
        let timeout_ms = POLL_SLICE.as_millis() as i32;
        let mut open = mine.len();
        let mut senders_stopped = false;
        while open > 0 {
            if control.aborted() {
                for i in 0..mine.len() {
                    self.close(i, mine, shared, shared.stop_reason(), &mut open);
                }
                break;
            }
            if control.sending_stopped() && !senders_stopped {
                senders_stopped = true;
                for i in 0..mine.len() {
                    if mine[i].role == Role::Send {
                        self.close(i, mine, shared, shared.stop_reason(), &mut open);
                    }
                }
                continue;
            }
            // SAFETY: `events` is a valid, writable array of `events.len()` epoll_events for the
            // whole call, and the epoll descriptor is open.
            let ready = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    self.events.as_mut_ptr(),
                    self.events.len() as i32,
                    timeout_ms,
                )
            };
            // 0: the slice passed with nothing ready; < 0: EINTR (nothing else can fail here).
            for k in 0..ready.max(0) as usize {
                let i = self.events[k].u64 as usize;
                self.step(i, mine, send_buf, recv_buf, shared, &mut open);
            }
        }
    }

    /// One read or write on stream `i`, which epoll reported ready (or in error, or hung up:
    /// the call then returns the error or the end of stream).
    fn step(
        &mut self,
        i: usize,
        mine: &[WorkerStream<'_>],
        send_buf: &[u8],
        recv_buf: &mut [u8],
        shared: &Shared<'_>,
        open: &mut usize,
    ) {
        let st = &mut self.streams[i];
        if !st.open {
            return;
        }
        let s = &mine[i];
        let c = &shared.counters[s.idx];
        let mut sock = s.socket;
        let r = match s.role {
            Role::Send => {
                if shared.count == Some(st.ops) {
                    self.close(i, mine, shared, StreamEnd::Count, open);
                    return;
                }
                sock.write(&send_buf[st.off..])
            }
            Role::Receive => sock.read(recv_buf),
        };
        let end = match r {
            Ok(0) if s.role == Role::Receive => StreamEnd::Eof,
            Ok(k) => {
                st.bytes += k as u64;
                c.bytes.store(st.bytes, Relaxed);
                if s.role == Role::Send {
                    st.off += k;
                    if st.off < send_buf.len() {
                        return;
                    }
                    st.off = 0;
                }
                st.ops += 1;
                c.ops.store(st.ops, Relaxed);
                if s.role == Role::Receive || shared.count != Some(st.ops) {
                    return;
                }
                StreamEnd::Count
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => return,
            Err(e) => {
                shared.count_error(s.idx, &e);
                StreamEnd::Error
            }
        };
        self.close(i, mine, shared, end, open);
    }

    /// Ends stream `i` (if still open): shuts a sender's side, stops watching the socket, and
    /// records the end.
    fn close(&mut self, i: usize, mine: &[WorkerStream<'_>], shared: &Shared<'_>, end: StreamEnd, open: &mut usize) {
        let st = &mut self.streams[i];
        if !st.open {
            return;
        }
        st.open = false;
        *open -= 1;
        let s = &mine[i];
        if s.role == Role::Send {
            let _ = s.socket.shutdown(Shutdown::Write);
        }
        // SAFETY: both descriptors are open; EPOLL_CTL_DEL ignores the event pointer (null is
        // allowed since Linux 2.6.9).
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                s.socket.as_raw_fd(),
                std::ptr::null_mut(),
            );
        }
        shared.finish(s.idx, end);
    }
}
