//! The TOE workload (`--mix R:W`): on every connection, transfers of `buffer_bytes` one after
//! another, reads (agent to client) and writes (client to agent) in the spec's fixed pattern
//! ([`crate::spec::MixPattern`]), each answered before the next starts, so that a transfer's
//! size matters as it did in the offload reports (a small transfer pays a round trip).
//!
//! On the wire, per transfer: a write is `buffer_bytes` from the client answered by a one-byte
//! ack from the agent; a read is a one-byte request from the client answered by `buffer_bytes`
//! from the agent. The client starts the next transfer only when the current one is complete
//! (ack or last byte in); it ends at its limit (count or deadline, checked between transfers) by
//! shutting its side, which the agent reads as end of stream where the next transfer would
//! begin. The one-byte messages are not counted as data.
//!
//! Counting: each connection is two counted streams, forward (the writes) and reverse (the
//! reads), so the runner, the summary and the live lines treat a mix like `--bidir`. A sending
//! stream's ops are transfers written in full (the client's: acknowledged), a receiving
//! stream's ops transfers received in full. Workers as for one-way streams (`--threads`, else
//! one per CPU, never more than connections); a worker with one connection makes blocking calls
//! with the sockets' 100 ms timeouts (so stop flags are seen), one with several drives them from
//! an epoll loop (`mix_event`); one buffer per worker, touched before the clock. The loops
//! allocate, lock and format nothing.

use super::{DataStream, mix_event};
use crate::engine::run::{Counters, Gate, RunState, Runner, Shared, StreamInfo};
use crate::engine::{Control, EngineError, Sink, pin, sockopt};
use crate::result::{Role, SideReport, SocketGrant, StreamEnd};
use crate::spec::{MixPattern, TcpSpec};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::OnceLock;
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

/// Tunes a mixed connection for both directions (SO_SNDBUF and SO_RCVBUF as asked, the timeouts)
/// and sets TCP_NODELAY: a transfer's last segment, and every one-byte message, would otherwise
/// wait for the peer's delayed ACK (up to 40 ms each on Linux) and the run would measure that.
pub fn configure(stream: &TcpStream, spec: &TcpSpec) -> Result<SocketGrant, EngineError> {
    sockopt::configure(stream, spec, Role::Send)?;
    sockopt::configure(stream, spec, Role::Receive)?;
    stream.set_nodelay(true).map_err(|source| EngineError::SocketOption {
        option: "TCP_NODELAY",
        source,
    })?;
    Ok(sockopt::grant(stream))
}

/// Runs the mixed connections (each a [`DataStream`] whose `id` is its forward stream's number;
/// its reverse stream is `id + spec.streams`) until the client's limit, and returns what this
/// end counted: the forward streams first, then the reverse ones.
pub fn run(
    spec: &TcpSpec,
    end: MixEnd,
    cpus: &[usize],
    connections: Vec<DataStream>,
    sink: &mut dyn Sink,
    control: &Control,
) -> Result<SideReport, EngineError> {
    pin::check_cpus(cpus)?;
    let pattern = spec.mix.map(|m| m.pattern()).ok_or(EngineError::Io {
        what: "a mixed run needs --mix in its spec",
        source: io::Error::from(io::ErrorKind::InvalidInput),
    })?;
    let n = connections.len();
    let workers = super::worker_count(spec.threads, cpus, n);
    let epoll_failed: OnceLock<String> = OnceLock::new();
    let state = RunState::new(2 * n);
    let gate = Gate::new();
    let shared = super::shared_for(spec, &state, control);
    let (forward, reverse) = match end {
        MixEnd::Client => (Role::Send, Role::Receive),
        MixEnd::Agent => (Role::Receive, Role::Send),
    };
    let role = |i: usize| if i < n { forward } else { reverse };
    let infos = connections
        .iter()
        .map(|c| (c.id, forward, &c.grant))
        .chain(connections.iter().map(|c| (c.id + spec.streams, reverse, &c.grant)));
    // The sending stream of each connection reports TCP_INFO (its socket's send side).
    let tcp_info = |i: usize| {
        (role(i) == Role::Send)
            .then(|| sockopt::tcp_info(&connections[i % n].socket))
            .flatten()
    };
    let runner = Runner {
        plan: super::plan_for(spec),
        streams: StreamInfo::all(infos),
        workers,
        name: "linerate-m",
        cpus,
        tcp_info: Some(&tcp_info),
    };
    let len = shared.buffer_bytes;
    let (mut report, _) = runner.drive(&shared, &gate, sink, |w| {
        let links: Vec<Link<'_>> = connections
            .iter()
            .enumerate()
            .filter(|(i, _)| i % workers == w)
            .map(|(i, c)| Link {
                socket: &c.socket,
                shared: &shared,
                forward: i,
                reverse: n + i,
            })
            .collect();
        // Touched before the clock matters: a byte pattern, not zero pages. One buffer serves
        // every connection of the worker both ways; its bytes are never inspected.
        let mut buf: Vec<u8> = (0..len).map(|i| i as u8).collect();
        // One connection: plain blocking calls; several: one epoll loop (mix_event).
        if let [one] = &links[..] {
            gate.arrive_and_wait(&shared.sampler);
            one.run(end, pattern, &mut buf);
            return;
        }
        match mix_event::EventLoop::new(&links, pattern) {
            Ok(mut ev) => {
                gate.arrive_and_wait(&shared.sampler);
                ev.run(&links, end, &mut buf, &shared);
            }
            Err(e) => {
                let _ = epoll_failed.set(e.to_string());
                gate.arrive_and_wait(&shared.sampler);
                for l in &links {
                    shared.count_error(l.forward, &e);
                    shared.finish(l.forward, StreamEnd::Error);
                    shared.finish(l.reverse, StreamEnd::Error);
                }
            }
        }
    })?;
    report.io = "syscall".into();
    super::end_notes(&mut report, spec, &epoll_failed);
    Ok(report)
}

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
    fn run(&self, end: MixEnd, mut pattern: MixPattern, buf: &mut [u8]) {
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
    fn write_all(&self, data: &[u8], mut tally: Option<&mut Tally<'_>>) -> Result<(), StreamEnd> {
        let mut sock = self.socket;
        let mut off = 0;
        while off < data.len() {
            if self.shared.control.aborted() {
                return Err(StreamEnd::Stopped);
            }
            match sock.write(&data[off..]) {
                Ok(k) => {
                    off += k;
                    if let Some(t) = tally.as_deref_mut() {
                        t.add_bytes(k);
                    }
                }
                Err(e) if super::is_again(&e) => {}
                Err(e) => return Err(self.failed(&e)),
            }
        }
        Ok(())
    }

    /// Fills `buf`, counting into `tally` when given; the peer's close ends the stream (`Eof`).
    fn read_exact(&self, buf: &mut [u8], mut tally: Option<&mut Tally<'_>>) -> Result<(), StreamEnd> {
        let mut sock = self.socket;
        let mut off = 0;
        while off < buf.len() {
            if self.shared.control.aborted() {
                return Err(StreamEnd::Stopped);
            }
            match sock.read(&mut buf[off..]) {
                Ok(0) => return Err(StreamEnd::Eof),
                Ok(k) => {
                    off += k;
                    if let Some(t) = tally.as_deref_mut() {
                        t.add_bytes(k);
                    }
                }
                Err(e) if super::is_again(&e) => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NullSink;
    use crate::spec::Limit;
    use crate::units::ByteSize;
    use std::net::TcpListener;
    use std::thread;

    /// Both ends of `n` mixed connections on loopback, run to the end: (client, agent).
    fn run_both(spec: &TcpSpec, n: usize) -> (SideReport, SideReport) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let (mut client, mut agent) = (Vec::new(), Vec::new());
        for i in 0..n {
            let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
            let a = l.accept().expect("accept").0;
            for (side, sock) in [(&mut client, c), (&mut agent, a)] {
                side.push(DataStream {
                    id: i as u16,
                    role: Role::Send,
                    grant: configure(&sock, spec).expect("configure"),
                    socket: sock,
                });
            }
        }
        let agent_control = Control::default();
        thread::scope(|s| {
            let h = s.spawn(|| run(spec, MixEnd::Agent, &[], agent, &mut NullSink, &agent_control).expect("agent"));
            let c = run(spec, MixEnd::Client, &[], client, &mut NullSink, &Control::default()).expect("client");
            (c, h.join().expect("join"))
        })
    }

    fn bytes(r: &SideReport, id: u16) -> (u64, u64) {
        let s = r.streams.iter().find(|s| s.stream == id).expect("stream");
        (s.bytes, s.ops)
    }

    #[test]
    fn count_mode_moves_exact_transfers_each_way_in_the_pattern_shares() {
        let mut spec = TcpSpec::new();
        spec.streams = 2;
        spec.mix = Some("70:30".parse().expect("valid"));
        spec.buffer_bytes = ByteSize(3_000);
        spec.timing.limit = Limit::Buffers(100);
        let (client, agent) = run_both(&spec, 2);
        for id in 0..2u16 {
            // 100 transfers: 70 reads (reverse, stream id + 2) and 30 writes (forward, id).
            assert_eq!(bytes(&client, id), (30 * 3_000, 30), "client writes");
            assert_eq!(bytes(&agent, id), (30 * 3_000, 30), "agent receives");
            assert_eq!(bytes(&agent, id + 2), (70 * 3_000, 70), "agent sends the reads");
            assert_eq!(bytes(&client, id + 2), (70 * 3_000, 70), "client receives them");
        }
        assert!(client.streams.iter().all(|s| s.end == StreamEnd::Count), "{client:?}");
        assert!(agent.streams.iter().all(|s| s.end == StreamEnd::Eof), "{agent:?}");
        assert!(!client.partial && !agent.partial);
        let roles: Vec<Role> = client.streams.iter().map(|s| s.role).collect();
        assert_eq!(roles, [Role::Send, Role::Send, Role::Receive, Role::Receive]);
        assert!(client.streams[0].socket.nodelay);
    }

    #[test]
    fn time_mode_ends_between_transfers_with_both_ends_agreeing() {
        let mut spec = TcpSpec::new();
        spec.mix = Some("50:50".parse().expect("valid"));
        spec.buffer_bytes = ByteSize(16 << 10);
        spec.timing.limit = Limit::Seconds(0.5);
        spec.timing.interval_seconds = 0.0;
        let (client, agent) = run_both(&spec, 1);
        assert_eq!(client.streams[0].end, StreamEnd::Deadline);
        for id in [0u16, 1] {
            let (c, a) = (bytes(&client, id), bytes(&agent, id));
            assert_eq!(c.0, a.0, "stream {id}: both ends count the same bytes");
            assert_eq!(c.0, c.1 * (16 << 10), "stream {id}: whole transfers only");
            assert!(c.1 > 0, "stream {id} moved transfers");
        }
        let (w, r) = (bytes(&client, 0).1, bytes(&client, 1).1);
        assert!(w.abs_diff(r) <= 1, "50:50 alternates: {w} writes, {r} reads");
    }

    #[test]
    fn several_connections_on_one_worker_move_exact_transfers_from_the_event_loop() {
        for threads in [1u16, 2] {
            let mut spec = TcpSpec::new();
            spec.streams = 3;
            spec.threads = threads; // 1: one epoll loop; 2: a loop of two and a blocking one
            spec.mix = Some("70:30".parse().expect("valid"));
            spec.buffer_bytes = ByteSize(70_000); // past a socket buffer: partial calls
            spec.timing.limit = Limit::Buffers(200);
            let (client, agent) = run_both(&spec, 3);
            for id in 0..3u16 {
                assert_eq!(
                    bytes(&client, id),
                    (60 * 70_000, 60),
                    "threads {threads}: client writes"
                );
                assert_eq!(
                    bytes(&agent, id),
                    (60 * 70_000, 60),
                    "threads {threads}: agent receives"
                );
                assert_eq!(
                    bytes(&agent, id + 3),
                    (140 * 70_000, 140),
                    "threads {threads}: reads sent"
                );
                assert_eq!(
                    bytes(&client, id + 3),
                    (140 * 70_000, 140),
                    "threads {threads}: reads in"
                );
            }
            assert!(client.streams.iter().all(|s| s.end == StreamEnd::Count), "{client:?}");
            assert!(agent.streams.iter().all(|s| s.end == StreamEnd::Eof), "{agent:?}");
            assert!(!client.partial && !agent.partial);
        }
    }

    #[test]
    fn an_event_loop_worker_stops_at_the_deadline_between_transfers() {
        let mut spec = TcpSpec::new();
        spec.streams = 4;
        spec.threads = 1;
        spec.mix = Some("50:50".parse().expect("valid"));
        spec.buffer_bytes = ByteSize(16 << 10);
        spec.timing.limit = Limit::Seconds(0.5);
        spec.timing.interval_seconds = 0.0;
        let (client, agent) = run_both(&spec, 4);
        for id in 0..8u16 {
            let (c, a) = (bytes(&client, id), bytes(&agent, id));
            assert_eq!(c.0, a.0, "stream {id}: both ends count the same bytes");
            assert_eq!(c.0, c.1 * (16 << 10), "stream {id}: whole transfers only");
        }
        assert!(
            client.streams.iter().all(|s| s.end == StreamEnd::Deadline),
            "{client:?}"
        );
        assert!(agent.streams.iter().all(|s| s.end == StreamEnd::Eof), "{agent:?}");
        assert!(client.streams.iter().all(|s| s.ops > 0), "every stream moved transfers");
    }
}
