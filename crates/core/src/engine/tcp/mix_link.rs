//! One mixed connection (`--mix`) as its worker holds it ([`Link`]): its two counted streams,
//! the one-byte messages that frame each transfer, and the blocking loop that drives it (one
//! connection per worker). What a transfer is on the wire is described in `mix`; the epoll loop
//! for several connections per worker is `mix_event`.

use super::stream::is_again;
use crate::engine::run::{Counters, Shared};
use crate::result::StreamEnd;
use crate::spec::MixPattern;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering::Relaxed;

/// Which end of a mixed connection this is: the client drives, the agent answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixEnd {
    Client,
    Agent,
}

/// The client's one-byte message asking for a read.
pub(super) const REQUEST: u8 = b'r';
/// The agent's one-byte answer to a write received in full.
pub(super) const ACK: u8 = b'a';

/// One mixed connection as its worker drives it, with the indices of its two counted streams.
pub(super) struct Link<'a> {
    pub socket: &'a TcpStream,
    pub shared: &'a Shared<'a>,
    pub forward: usize,
    pub reverse: usize,
}

/// Bytes and completed transfers of one counted stream, as its worker keeps them.
struct Tally<'a> {
    counters: &'a Counters,
    bytes: u64,
    transfers: u64,
}

impl Tally<'_> {
    fn add_bytes(&mut self, k: usize) {
        self.bytes += k as u64;
        self.counters.bytes.store(self.bytes, Relaxed);
    }

    fn complete(&mut self) {
        self.transfers += 1;
        self.counters.ops.store(self.transfers, Relaxed);
    }
}

impl Link<'_> {
    /// Transfers until the client's limit or the client's close, then records both streams' end.
    pub fn run(&self, end: MixEnd, mut pattern: MixPattern, buf: &mut [u8]) {
        let shared = self.shared;
        let control = shared.control;
        let mut fwd = Tally {
            counters: &shared.counters[self.forward],
            bytes: 0,
            transfers: 0,
        };
        let mut rev = Tally {
            counters: &shared.counters[self.reverse],
            bytes: 0,
            transfers: 0,
        };
        let mut one = [0u8; 1];
        let mut done = 0u64;
        let why = loop {
            if control.aborted() {
                break StreamEnd::Stopped;
            }
            if end == MixEnd::Client {
                if control.sending_stopped() {
                    break shared.stop_reason();
                }
                if shared.count == Some(done) {
                    break StreamEnd::Count;
                }
            }
            let read = pattern.next_is_read();
            let step = match (end, read) {
                (MixEnd::Client, false) => self
                    .write_all(buf, Some(&mut fwd))
                    .and_then(|()| self.read_exact(&mut one, None))
                    .and_then(|()| self.expect(one[0], ACK))
                    .map(|()| fwd.complete()),
                (MixEnd::Client, true) => self
                    .write_all(&[REQUEST], None)
                    .and_then(|()| self.read_exact(buf, Some(&mut rev)))
                    .map(|()| rev.complete()),
                (MixEnd::Agent, false) => self
                    .read_exact(buf, Some(&mut fwd))
                    .map(|()| fwd.complete())
                    .and_then(|()| self.write_all(&[ACK], None)),
                (MixEnd::Agent, true) => self
                    .read_exact(&mut one, None)
                    .and_then(|()| self.expect(one[0], REQUEST))
                    .and_then(|()| self.write_all(buf, Some(&mut rev)))
                    .map(|()| rev.complete()),
            };
            if let Err(why) = step {
                break why;
            }
            done += 1;
        };
        let _ = self.socket.shutdown(Shutdown::Write);
        shared.finish(self.forward, why);
        shared.finish(self.reverse, why);
    }

    /// A one-byte message that is not the one the pattern calls for: the ends disagree on the
    /// pattern (or something else is on the connection); counted as an error, the stream ends.
    fn expect(&self, got: u8, want: u8) -> Result<(), StreamEnd> {
        if got == want {
            Ok(())
        } else {
            self.shared
                .count_error(self.forward, &io::Error::from(io::ErrorKind::InvalidData));
            Err(StreamEnd::Error)
        }
    }

    /// Writes all of `data`, counting it into `tally` when given.
    fn write_all(&self, data: &[u8], tally: Option<&mut Tally<'_>>) -> Result<(), StreamEnd> {
        let mut sock = self.socket;
        self.whole(data.len(), tally, |off| sock.write(&data[off..]))
    }

    /// Fills `buf`, counting into `tally` when given; the peer's close ends the stream (`Eof`).
    fn read_exact(&self, buf: &mut [u8], tally: Option<&mut Tally<'_>>) -> Result<(), StreamEnd> {
        let mut sock = self.socket;
        self.whole(buf.len(), tally, |off| sock.read(&mut buf[off..]))
    }

    /// Calls `call(offset)` until `len` bytes have moved, counting them into `tally` when given.
    /// A call that moves nothing is the peer's close (a write of a non-empty buffer never returns
    /// 0); a timeout or an interruption calls again after a look at the abort flag.
    fn whole(
        &self,
        len: usize,
        mut tally: Option<&mut Tally<'_>>,
        mut call: impl FnMut(usize) -> io::Result<usize>,
    ) -> Result<(), StreamEnd> {
        let mut off = 0;
        while off < len {
            if self.shared.control.aborted() {
                return Err(StreamEnd::Stopped);
            }
            match call(off) {
                Ok(0) => return Err(StreamEnd::Eof),
                Ok(k) => {
                    off += k;
                    if let Some(t) = tally.as_deref_mut() {
                        t.add_bytes(k);
                    }
                }
                Err(e) if is_again(&e) => {}
                Err(e) => return Err(self.failed(&e)),
            }
        }
        Ok(())
    }

    fn failed(&self, e: &io::Error) -> StreamEnd {
        self.shared.count_error(self.forward, e);
        StreamEnd::Error
    }
}
