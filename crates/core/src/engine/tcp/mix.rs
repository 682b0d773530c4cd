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
//! an epoll loop (`mix_event`): the TCP runner's blocking and epoll styles. One buffer per
//! worker, touched before the clock. The loops allocate, lock and format nothing.

use super::mix_event;
use super::mix_link::Link;
pub use super::mix_link::MixEnd;
use super::runner::{self, Workload};
use super::stream::DataStream;
use crate::engine::run::{Gate, Shared};
use crate::engine::sockopt::{self, Proto, Tuning};
use crate::engine::{Control, EngineError, Sink};
use crate::result::{Role, SideReport, SocketGrant, StreamEnd};
use crate::spec::{MixPattern, TcpSpec};
use std::io;
use std::net::TcpStream;

/// Tunes a mixed connection for both directions (SO_SNDBUF and SO_RCVBUF as asked, the timeouts)
/// and sets TCP_NODELAY: a transfer's last segment, and every one-byte message, would otherwise
/// wait for the peer's delayed ACK (up to 40 ms each on Linux) and the run would measure that.
pub fn configure(stream: &TcpStream, spec: &TcpSpec) -> Result<SocketGrant, EngineError> {
    let tuning = Tuning {
        nodelay: true,
        ..Tuning::tcp(spec, true, true)
    };
    sockopt::apply(stream, &tuning, Proto::Tcp)
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
    let pattern = spec.mix.map(|m| m.pattern()).ok_or(EngineError::Io {
        what: "a mixed run needs --mix in its spec",
        source: io::Error::from(io::ErrorKind::InvalidInput),
    })?;
    let mix = Mix {
        end,
        pattern,
        connections: connections.len(),
        reverse_ids: spec.streams,
    };
    runner::run(spec, &mix, cpus, &connections, sink, control)
}

/// Mixed transfers: every connection two counted streams, forward (the client's writes) and
/// reverse (its reads).
struct Mix {
    end: MixEnd,
    pattern: MixPattern,
    connections: usize,
    /// A reverse stream's id is its forward stream's plus this (the spec's streams).
    reverse_ids: u16,
}

impl Workload for Mix {
    type Unit<'a> = Link<'a>;
    const NAME: &'static str = "linerate-m";
    /// `--mix` waits for each transfer's answer: `--depth` does not apply.
    const URING: bool = false;

    fn streams(&self, sockets: &[DataStream]) -> Vec<(u16, Role, usize)> {
        let (forward, reverse) = match self.end {
            MixEnd::Client => (Role::Send, Role::Receive),
            MixEnd::Agent => (Role::Receive, Role::Send),
        };
        let ids = |role, add: u16| sockets.iter().enumerate().map(move |(i, c)| (c.id + add, role, i));
        ids(forward, 0).chain(ids(reverse, self.reverse_ids)).collect()
    }

    fn unit<'a>(&self, i: usize, socket: &'a DataStream, shared: &'a Shared<'a>) -> Link<'a> {
        Link {
            socket: &socket.socket,
            shared,
            forward: i,
            reverse: self.connections + i,
        }
    }

    /// One buffer serves the connection both ways; its bytes are never inspected.
    fn blocking(&self, unit: &Link<'_>, shared: &Shared<'_>, gate: &Gate) {
        let mut buf = buffer(shared.buffer_bytes);
        gate.arrive_and_wait(&shared.sampler);
        unit.run(self.end, self.pattern, &mut buf);
    }

    /// One buffer serves every connection of the worker both ways.
    fn event_loop(&self, units: &[Link<'_>], shared: &Shared<'_>, gate: &Gate) -> io::Result<()> {
        let mut buf = buffer(shared.buffer_bytes);
        let mut ev = mix_event::EventLoop::new(units, self.pattern)?;
        gate.arrive_and_wait(&shared.sampler);
        ev.run(units, self.end, &mut buf, shared);
        Ok(())
    }

    fn fail(&self, unit: &Link<'_>, shared: &Shared<'_>, e: &io::Error) {
        shared.count_error(unit.forward, e);
        shared.finish(unit.forward, StreamEnd::Error);
        shared.finish(unit.reverse, StreamEnd::Error);
    }
}

/// Touched before the clock matters: a byte pattern, not zero pages.
fn buffer(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
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
