//! One-way streams as a [`Workload`]: each socket one counted stream that only sends or only
//! receives buffers of `-l` bytes. Blocking calls here; the epoll loop in `event`, io_uring in
//! `uring`. A sender counts whole buffers as ops and ends at its count or when told to stop (its
//! side shut so the receiver sees the end); a receiver counts reads and ends at end of stream.

use super::runner::Workload;
use super::stream::{DataStream, WorkerStream, is_again};
use super::zerocopy::{Sender, Tally};
use super::{event, uring};
use crate::engine::run::{Gate, Shared};
use crate::engine::sockopt;
use crate::result::{Role, StreamEnd};
use std::io::{self, Read};
use std::net::Shutdown;
use std::sync::atomic::Ordering::Relaxed;

/// One-way streams: every socket sends or receives, as its [`DataStream::role`] says; `tally`
/// gathers what the workers saw of `--zerocopy`.
#[derive(Default)]
pub(super) struct OneWay {
    pub tally: Tally,
}

/// A buffer of `len` bytes touched before the clock matters (a byte pattern, not zero pages);
/// empty when `any` is false.
fn pattern(len: usize, any: bool) -> Vec<u8> {
    if any {
        (0..len).map(|i| i as u8).collect()
    } else {
        Vec::new()
    }
}

impl Workload for OneWay {
    type Unit<'a> = WorkerStream<'a>;
    const NAME: &'static str = "linerate-w";
    const URING: bool = true;

    fn streams(&self, sockets: &[DataStream]) -> Vec<(u16, Role, usize)> {
        sockets.iter().enumerate().map(|(i, s)| (s.id, s.role, i)).collect()
    }

    fn unit<'a>(&self, i: usize, socket: &'a DataStream, _: &'a Shared<'a>) -> WorkerStream<'a> {
        WorkerStream {
            idx: i,
            role: socket.role,
            socket: &socket.socket,
            zerocopy: socket.grant.zerocopy.filter(|_| socket.role == Role::Send),
        }
    }

    fn blocking(&self, unit: &WorkerStream<'_>, shared: &Shared<'_>, gate: &Gate) {
        let mut buf = pattern(shared.buffer_bytes, true);
        let mut sender = Sender::new(unit.zerocopy, &buf, &self.tally);
        if unit.role == Role::Receive {
            sockopt::wake_for_whole_reads(unit.socket, buf.len());
        }
        gate.arrive_and_wait(&shared.sampler);
        blocking_stream(unit, &mut buf, &mut sender, shared);
        sender.finish(unit.socket, &self.tally);
    }

    /// The streams of one worker share a send and a receive buffer (their bytes are never
    /// inspected).
    fn event_loop(&self, units: &[WorkerStream<'_>], shared: &Shared<'_>, gate: &Gate) -> io::Result<()> {
        let len = shared.buffer_bytes;
        let send_buf = pattern(len, units.iter().any(|s| s.role == Role::Send));
        let mut recv_buf = pattern(len, units.iter().any(|s| s.role == Role::Receive));
        let mut ev = event::EventLoop::new(units, &send_buf, &self.tally)?;
        gate.arrive_and_wait(&shared.sampler);
        ev.run(units, &send_buf, &mut recv_buf, shared);
        Ok(())
    }

    fn uring(&self, units: &[WorkerStream<'_>], depth: usize, shared: &Shared<'_>, gate: &Gate) -> io::Result<()> {
        let mut u = uring::Worker::new(units, depth, shared.buffer_bytes)?;
        gate.arrive_and_wait(&shared.sampler);
        u.run(units, shared);
        Ok(())
    }

    fn fail(&self, unit: &WorkerStream<'_>, shared: &Shared<'_>, e: &io::Error) {
        shared.count_error(unit.idx, e);
        shared.finish(unit.idx, StreamEnd::Error);
    }
}

/// One stream on blocking calls until its end.
fn blocking_stream(s: &WorkerStream<'_>, buf: &mut [u8], sender: &mut Sender, shared: &Shared<'_>) {
    let c = &shared.counters[s.idx];
    let control = shared.control;
    let mut sock = s.socket;
    let (mut bytes, mut ops) = (0u64, 0u64);
    let end = match s.role {
        Role::Send => {
            let mut off = 0usize;
            let end = loop {
                if control.sending_stopped() || control.aborted() {
                    break shared.stop_reason();
                }
                if shared.count == Some(ops) {
                    break StreamEnd::Count;
                }
                match sender.send(sock, buf, off) {
                    Ok(k) => {
                        bytes += k as u64;
                        off += k;
                        if off == buf.len() {
                            off = 0;
                            ops += 1;
                            c.ops.store(ops, Relaxed);
                        }
                        c.bytes.store(bytes, Relaxed);
                    }
                    Err(e) if is_again(&e) => {}
                    Err(e) => {
                        shared.count_error(s.idx, &e);
                        break StreamEnd::Error;
                    }
                }
            };
            let _ = sock.shutdown(Shutdown::Write);
            end
        }
        Role::Receive => loop {
            if control.aborted() {
                break StreamEnd::Stopped;
            }
            match sock.read(buf) {
                Ok(0) => break StreamEnd::Eof,
                Ok(k) => {
                    bytes += k as u64;
                    ops += 1;
                    c.bytes.store(bytes, Relaxed);
                    c.ops.store(ops, Relaxed);
                }
                Err(e) if is_again(&e) => {}
                Err(e) => {
                    shared.count_error(s.idx, &e);
                    break StreamEnd::Error;
                }
            }
        },
    };
    shared.finish(s.idx, end);
}
