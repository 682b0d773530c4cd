//! Several mixed connections on one worker (`--mix` with fewer workers than streams): the same
//! transfers as the blocking loop of `mix_link`, as a state machine per connection driven from
//! one edge-triggered epoll(7) loop.
//!
//! In: the worker's [`Link`]s, which end this is, the pattern, one buffer (its bytes are never
//! inspected, so connections share it) and the run's counters. Out: the same counts and ends as
//! the blocking loop. Edge-triggered with both directions registered once: a transfer switches
//! between sending and receiving twice, and level-triggered interest would need an epoll_ctl at
//! each switch (or spin on an always-writable socket). The price of edge triggering is that a
//! connection is driven until a call would block; each transfer waits for its peer's answer, so
//! no connection can hold the worker for long. Stop flags are seen within [`POLL_SLICE`].

use super::epoll::Epoll;
use super::mix_link::{ACK, Link, MixEnd, REQUEST};
use crate::engine::run::Shared;
use crate::engine::sockopt::POLL_SLICE;
use crate::result::StreamEnd;
use crate::spec::MixPattern;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::Ordering::Relaxed;

/// Where one connection stands.
#[derive(Clone, Copy)]
struct State {
    pattern: MixPattern,
    /// The current transfer is a read (agent to client).
    read: bool,
    /// 0: the transfer's first message, 1: its answer.
    step: u8,
    /// Bytes done of the current message.
    off: usize,
    /// Between transfers: the next one has not begun.
    boundary: bool,
    /// Transfers begun and finished on this connection.
    done: u64,
    fwd_bytes: u64,
    fwd_transfers: u64,
    rev_bytes: u64,
    rev_transfers: u64,
    open: bool,
}

/// One message of a transfer as this end handles it.
struct Message {
    send: bool,
    /// `buffer_bytes` of data (counted), or one byte of request or ack (not counted).
    data: bool,
    /// The one byte sent, or expected.
    byte: u8,
}

/// The two messages of a transfer, from this end: a write is data then ack, a read request then
/// data.
fn message(end: MixEnd, read: bool, step: u8) -> Message {
    let client = end == MixEnd::Client;
    let (first_from_client, data_first) = if read { (true, false) } else { (true, true) };
    let from_client = (step == 0) == first_from_client;
    let data = (step == 0) == data_first;
    Message {
        send: from_client == client,
        data,
        byte: if read { REQUEST } else { ACK },
    }
}

/// The transfer counts as complete after this step: when its data is in (the receiver) or its
/// answer is in (the client's write); the agent's read after its data is out.
fn completes_after(end: MixEnd, read: bool) -> u8 {
    if end == MixEnd::Agent && !read { 0 } else { 1 }
}

pub(super) struct EventLoop {
    epoll: Epoll,
    states: Vec<State>,
}

impl EventLoop {
    /// Makes the sockets non-blocking and registers them, before the clock starts.
    pub fn new(links: &[Link<'_>], pattern: MixPattern) -> io::Result<EventLoop> {
        let epoll = Epoll::new(links.len())?;
        for (i, l) in links.iter().enumerate() {
            epoll.add(
                l.socket,
                i,
                libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET,
            )?;
        }
        let state = State {
            pattern,
            read: false,
            step: 0,
            off: 0,
            boundary: true,
            done: 0,
            fwd_bytes: 0,
            fwd_transfers: 0,
            rev_bytes: 0,
            rev_transfers: 0,
            open: true,
        };
        Ok(EventLoop {
            epoll,
            states: vec![state; links.len()],
        })
    }

    /// Drives every connection to its end.
    pub fn run(&mut self, links: &[Link<'_>], end: MixEnd, buf: &mut [u8], shared: &Shared<'_>) {
        let mut open = links.len();
        // Edge-triggered: start every connection by hand, then wait for edges.
        for i in 0..links.len() {
            self.drive(i, links, end, buf, shared, &mut open);
        }
        let timeout_ms = POLL_SLICE.as_millis() as i32;
        while open > 0 {
            if shared.control.aborted() {
                for i in 0..links.len() {
                    self.close(i, links, StreamEnd::Stopped, &mut open);
                }
                break;
            }
            for k in 0..self.epoll.wait(timeout_ms) {
                let i = self.epoll.token(k);
                self.drive(i, links, end, buf, shared, &mut open);
            }
        }
    }

    /// Moves connection `i` on until a call would block or it ends.
    fn drive(
        &mut self,
        i: usize,
        links: &[Link<'_>],
        end: MixEnd,
        buf: &mut [u8],
        shared: &Shared<'_>,
        open: &mut usize,
    ) {
        let l = &links[i];
        let mut sock = l.socket;
        loop {
            let st = &mut self.states[i];
            if !st.open {
                return;
            }
            if st.boundary {
                let control = shared.control;
                let stop = if control.aborted() {
                    Some(StreamEnd::Stopped)
                } else if end == MixEnd::Client && control.sending_stopped() {
                    Some(shared.stop_reason())
                } else if end == MixEnd::Client && shared.count == Some(st.done) {
                    Some(StreamEnd::Count)
                } else {
                    None
                };
                if let Some(why) = stop {
                    self.close(i, links, why, open);
                    return;
                }
                st.read = st.pattern.next_is_read();
                st.step = 0;
                st.off = 0;
                st.boundary = false;
            }
            let m = message(end, st.read, st.step);
            let len = if m.data { buf.len() } else { 1 };
            let mut one = [m.byte];
            let r = match (m.send, m.data) {
                (true, true) => sock.write(&buf[st.off..]),
                (true, false) => sock.write(&one),
                (false, true) => sock.read(&mut buf[st.off..]),
                (false, false) => sock.read(&mut one),
            };
            let k = match r {
                Ok(0) if !m.send => {
                    self.close(i, links, StreamEnd::Eof, open);
                    return;
                }
                Ok(k) => k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    shared.count_error(l.forward, &e);
                    self.close(i, links, StreamEnd::Error, open);
                    return;
                }
            };
            if !m.data && !m.send && one[0] != m.byte {
                // The ends disagree on the pattern, or something else is on the connection.
                shared.count_error(l.forward, &io::Error::from(io::ErrorKind::InvalidData));
                self.close(i, links, StreamEnd::Error, open);
                return;
            }
            st.off += k;
            if m.data {
                let (bytes, idx) = if st.read {
                    (&mut st.rev_bytes, l.reverse)
                } else {
                    (&mut st.fwd_bytes, l.forward)
                };
                *bytes += k as u64;
                shared.counters[idx].bytes.store(*bytes, Relaxed);
            }
            if st.off < len {
                continue;
            }
            if st.step == completes_after(end, st.read) {
                let (transfers, idx) = if st.read {
                    (&mut st.rev_transfers, l.reverse)
                } else {
                    (&mut st.fwd_transfers, l.forward)
                };
                *transfers += 1;
                shared.counters[idx].ops.store(*transfers, Relaxed);
            }
            if st.step == 0 {
                st.step = 1;
                st.off = 0;
            } else {
                st.done += 1;
                st.boundary = true;
            }
        }
    }

    /// Ends connection `i` (if still open): shuts this end's side, stops watching it, and
    /// records both its streams' end.
    fn close(&mut self, i: usize, links: &[Link<'_>], why: StreamEnd, open: &mut usize) {
        let st = &mut self.states[i];
        if !st.open {
            return;
        }
        st.open = false;
        *open -= 1;
        let l = &links[i];
        let _ = l.socket.shutdown(Shutdown::Write);
        self.epoll.remove(l.socket);
        l.shared.finish(l.forward, why);
        l.shared.finish(l.reverse, why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transfer_is_a_message_and_its_answer() {
        let m = |end, read, step| {
            let m = message(end, read, step);
            (m.send, m.data)
        };
        // Client write: data out, ack in. Client read: request out, data in.
        assert_eq!(
            [m(MixEnd::Client, false, 0), m(MixEnd::Client, false, 1)],
            [(true, true), (false, false)]
        );
        assert_eq!(
            [m(MixEnd::Client, true, 0), m(MixEnd::Client, true, 1)],
            [(true, false), (false, true)]
        );
        // The agent mirrors it.
        assert_eq!(
            [m(MixEnd::Agent, false, 0), m(MixEnd::Agent, false, 1)],
            [(false, true), (true, false)]
        );
        assert_eq!(
            [m(MixEnd::Agent, true, 0), m(MixEnd::Agent, true, 1)],
            [(false, false), (true, true)]
        );
        assert_eq!(message(MixEnd::Client, true, 0).byte, REQUEST);
        assert_eq!(message(MixEnd::Agent, false, 1).byte, ACK);
        assert_eq!(
            completes_after(MixEnd::Agent, false),
            0,
            "the agent has a write once it is in"
        );
        assert_eq!(
            completes_after(MixEnd::Client, false),
            1,
            "the client once it is acknowledged"
        );
    }
}
