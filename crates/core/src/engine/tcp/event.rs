//! Several TCP streams on one worker: non-blocking sockets driven from one epoll(7) loop.
//!
//! In: a worker's streams (connected sockets, each sending or receiving), one send buffer and
//! one receive buffer for all of them (the bytes are never inspected, so streams share them),
//! and the run's [`Shared`] counters and flags. Out: the same counters the blocking path keeps
//! (bytes, ops, errors by kind) and one [`Shared::finish`] per stream, with the same ends:
//! `Count`, `Eof`, `Error`, or the stop reason when the sampler or a user stops the run.
//! Opening, tuning and pinning are left to the caller; the loop allocates, locks and formats
//! nothing, and sees `stop_send` / `abort` within [`POLL_SLICE`] (the epoll_wait timeout).

use super::epoll::Epoll;
use super::stream::WorkerStream;
use super::zerocopy::{Sender, Tally};
use crate::engine::run::Shared;
use crate::engine::sockopt::POLL_SLICE;
use crate::result::{Role, StreamEnd};
use std::io::{self, Read};
use std::net::Shutdown;
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
pub(super) struct EventLoop<'t> {
    epoll: Epoll,
    streams: Vec<State>,
    /// How each stream's writes reach the kernel (`--zerocopy`); receivers hold a copying one.
    senders: Vec<Sender>,
    tally: &'t Tally,
}

impl<'t> EventLoop<'t> {
    /// Makes the sockets non-blocking and registers them, before the clock starts.
    ///
    /// Level-triggered, not edge-triggered: the loop does one read or write per ready stream per
    /// wake-up so that a fast stream cannot starve the others, and a stream still ready after
    /// that one call must be reported again by the next epoll_wait. Edge-triggered would only
    /// report it again after a call hit EAGAIN, so the loop would have to keep its own list of
    /// streams left ready; level-triggered lets the kernel keep that list.
    /// A sending stream's zero-copy path is set up here too (`send_buf` is what it sends).
    pub fn new(mine: &[WorkerStream<'_>], send_buf: &[u8], tally: &'t Tally) -> io::Result<EventLoop<'t>> {
        let epoll = Epoll::new(mine.len())?;
        for (i, s) in mine.iter().enumerate() {
            let interest = match s.role {
                Role::Send => libc::EPOLLOUT,
                Role::Receive => libc::EPOLLIN | libc::EPOLLRDHUP,
            };
            epoll.add(s.socket, i, interest)?;
        }
        Ok(EventLoop {
            epoll,
            streams: vec![
                State {
                    open: true,
                    ..State::default()
                };
                mine.len()
            ],
            senders: mine.iter().map(|s| Sender::new(s.zerocopy, send_buf, tally)).collect(),
            tally,
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
            for k in 0..self.epoll.wait(timeout_ms) {
                let i = self.epoll.token(k);
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
                self.senders[i].send(sock, send_buf, st.off)
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
            self.senders[i].finish(s.socket, self.tally);
        }
        self.epoll.remove(s.socket);
        shared.finish(s.idx, end);
    }
}
