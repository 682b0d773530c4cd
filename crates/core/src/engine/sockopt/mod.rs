//! The socket-option base: every data socket of every engine (TCP, UDP, rr) is tuned here and
//! nowhere else. An engine says what it wants as a `Tuning` (buffers, TCP options, busy-poll,
//! timestamps, timeouts); `apply` sets it and reads back once what the kernel granted, as the
//! [`SocketGrant`] the result carries. Besides: TCP's MSS before connect, UDP GSO and GRO (set
//! and cleared by the UDP workers, which fall back when the kernel refuses), SO_BUSY_POLL and
//! TCP_INFO read back, and the notes on grants that differ from the ask (`notes`). Everything
//! here runs before the clock starts, except `tcp_info` (the sampling thread, once per interval)
//! and GSO's fallback (once, when a send fails). The libc calls are in `raw`.

pub(crate) mod multicast;
mod notes;
mod raw;

use super::EngineError;
use crate::result::{Role, SocketGrant};
use crate::spec::{Dscp, TcpSpec, ZeroCopy};
pub(crate) use notes::{Asked, ZeroCopySeen, busy_poll_note, grant_notes, zerocopy_notes};
use raw::Buffer;
#[cfg(test)]
pub(crate) use raw::set_int;
pub(crate) use raw::tcp_info;
pub(crate) use raw::{receive_queue_bytes, send_queue_bytes, tcp_bytes_received};
use socket2::SockRef;
use std::net::{TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::time::Duration;

/// How long a blocking read or write waits before the worker looks at its stop flags again.
pub(crate) const POLL_SLICE: Duration = Duration::from_millis(100);

fn opt(option: &'static str) -> impl FnOnce(std::io::Error) -> EngineError {
    move |source| EngineError::SocketOption { option, source }
}

/// What to set on one data socket before the clock starts; None or false leaves the kernel's
/// default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tuning<'a> {
    /// SO_RCVBUF (for TCP the window), bytes; forced past net.core.rmem_max where the process may.
    pub rcvbuf_bytes: Option<u64>,
    /// SO_SNDBUF, bytes; forced past net.core.wmem_max where the process may.
    pub sndbuf_bytes: Option<u64>,
    /// TCP_CONGESTION, by name.
    pub congestion: Option<&'a str>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// SO_BUSY_POLL, microseconds (above net.core.busy_read it needs CAP_NET_ADMIN).
    pub busy_poll_us: Option<u32>,
    /// SO_TIMESTAMPNS, best effort: without kernel receive times user-space ones are taken and
    /// the result says so.
    pub timestamps: bool,
    /// SO_RCVTIMEO: how long a blocking read waits before the worker looks at its flags.
    pub read_timeout: Option<Duration>,
    /// SO_SNDTIMEO, likewise for writes.
    pub write_timeout: Option<Duration>,
}

impl<'a> Tuning<'a> {
    /// What a TCP spec asks of a data socket that sends, receives, or both (a mixed connection):
    /// the window on a receiving socket, `--sndbuf` on a sending one, the congestion control,
    /// TCP_NODELAY when asked, and [`POLL_SLICE`] timeouts (workers block at most one slice in a
    /// call, then look at their stop flags).
    pub fn tcp(spec: &'a TcpSpec, sends: bool, receives: bool) -> Tuning<'a> {
        Tuning {
            rcvbuf_bytes: spec.window_bytes.filter(|_| receives).map(|w| w.0),
            sndbuf_bytes: spec.sndbuf_bytes.filter(|_| sends).map(|b| b.0),
            congestion: spec.congestion.as_deref(),
            nodelay: spec.nodelay,
            read_timeout: Some(POLL_SLICE),
            write_timeout: Some(POLL_SLICE),
            ..Tuning::default()
        }
    }
}

/// Which protocol a socket speaks: what its grant reads back (UDP has no MSS, congestion control
/// or Nagle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proto {
    Tcp,
    Udp,
}

/// Sets `tuning` on a data socket and reads back what the kernel granted.
pub(crate) fn apply(socket: &impl AsFd, tuning: &Tuning<'_>, proto: Proto) -> Result<SocketGrant, EngineError> {
    let fd = socket.as_fd();
    let s = SockRef::from(&fd);
    if let Some(bytes) = tuning.rcvbuf_bytes {
        raw::set_buffer(fd, Buffer::Receive, bytes).map_err(opt("SO_RCVBUF"))?;
    }
    if let Some(bytes) = tuning.sndbuf_bytes {
        raw::set_buffer(fd, Buffer::Send, bytes).map_err(opt("SO_SNDBUF"))?;
    }
    if let Some(cc) = tuning.congestion {
        s.set_tcp_congestion(cc.as_bytes()).map_err(opt("TCP_CONGESTION"))?;
    }
    if tuning.nodelay {
        s.set_tcp_nodelay(true).map_err(opt("TCP_NODELAY"))?;
    }
    if let Some(us) = tuning.busy_poll_us {
        s.set_busy_poll(us)
            .map_err(opt("SO_BUSY_POLL (needs CAP_NET_ADMIN above net.core.busy_read)"))?;
    }
    if tuning.timestamps {
        // No kernel stamps: user-space ones are taken instead and the result says so.
        let _ = raw::set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
    }
    if let Some(t) = tuning.read_timeout {
        s.set_read_timeout(Some(t)).map_err(opt("SO_RCVTIMEO"))?;
    }
    if let Some(t) = tuning.write_timeout {
        s.set_write_timeout(Some(t)).map_err(opt("SO_SNDTIMEO"))?;
    }
    Ok(grant(socket, proto))
}

/// What the kernel granted on a socket (0, empty or false where a figure cannot be read).
pub(crate) fn grant(socket: &impl AsFd, proto: Proto) -> SocketGrant {
    let s = SockRef::from(socket);
    let mut g = SocketGrant {
        sndbuf_bytes: s.send_buffer_size().unwrap_or(0) as u64,
        rcvbuf_bytes: s.recv_buffer_size().unwrap_or(0) as u64,
        ..SocketGrant::default()
    };
    if proto == Proto::Tcp {
        g.congestion = s
            .tcp_congestion()
            .map(|name| String::from_utf8_lossy(&name).trim_end_matches('\0').to_string())
            .unwrap_or_default();
        // Unknown (0, written as null) before a TCP connection is made.
        g.mss_bytes = s.tcp_mss().unwrap_or(0);
        g.nodelay = s.tcp_nodelay().unwrap_or(false);
    }
    g
}

/// Options that must be set before connect(2): the MSS is advertised in the SYN.
pub fn before_connect(sock: &socket2::Socket, spec: &TcpSpec) -> Result<(), EngineError> {
    if let Some(mss) = spec.mss_bytes {
        sock.set_tcp_mss(mss).map_err(opt("TCP_MAXSEG"))?;
    }
    // A receive buffer set before connect also sizes the window scale the SYN offers.
    if let Some(w) = spec.window_bytes {
        sock.set_recv_buffer_size(w.0 as usize).map_err(opt("SO_RCVBUF"))?;
    }
    Ok(())
}

/// Applies a TCP spec to a connected one-way data socket for the given role and reads back the
/// grant.
/// A sending socket under `--zerocopy` also gets its path (`SocketGrant::zerocopy`): sendfile
/// needs nothing of the socket; MSG_ZEROCOPY needs SO_ZEROCOPY, and where the kernel refuses it
/// the grant stays empty, writes copy and the runner's notes say so.
pub fn configure(stream: &TcpStream, spec: &TcpSpec, role: Role) -> Result<SocketGrant, EngineError> {
    let tuning = Tuning::tcp(spec, role == Role::Send, role == Role::Receive);
    let mut grant = apply(stream, &tuning, Proto::Tcp)?;
    if role == Role::Send {
        grant.zerocopy = spec.zerocopy.filter(|&z| z != ZeroCopy::Msg || enable_zerocopy(stream));
    }
    Ok(grant)
}

/// Marks a data socket's packets with a DSCP class (`--dscp`: IP_TOS on IPv4, IPV6_TCLASS on
/// IPv6) and records in its grant the class the kernel holds; nothing without a class. Set
/// after the socket is configured and before the clock starts, on both ends, so each direction's
/// packets (data and ACKs alike) carry the class.
pub fn mark(socket: &impl AsFd, dscp: Option<Dscp>, grant: &mut SocketGrant) -> Result<(), EngineError> {
    let Some(dscp) = dscp else {
        return Ok(());
    };
    let tos = raw::set_tos(socket.as_fd(), dscp.tos()).map_err(opt("IP_TOS / IPV6_TCLASS"))?;
    grant.dscp = Some(Dscp::of_tos(tos));
    Ok(())
}

/// Asks the kernel to wake a blocking reader of a TCP stream only once `bytes` are queued
/// (SO_RCVLOWAT, best effort; a read still returns what came within its timeout, and the
/// kernel caps it at half a fixed receive buffer). A thread that owns one receiving stream then
/// reads whole buffers rather than each 64 KiB segment as it lands: fewer wake-ups and ACKs
/// per byte, which is what held one stream behind iperf3 on loopback
/// (docs/benchmarks.md).
pub(crate) fn wake_for_whole_reads(socket: &impl AsFd, bytes: usize) {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let _ = raw::set_int(socket.as_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, bytes);
}

/// Caps the bytes a TCP socket holds unsent (TCP_NOTSENT_LOWAT, best effort): a writer is told
/// the socket is full past them, so data waits in the application, where later data (a probe's
/// request) is not queued behind it, rather than in the kernel's send buffer.
pub(crate) fn limit_unsent(socket: &impl AsFd, bytes: usize) {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let _ = raw::set_int(socket.as_fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, bytes);
}

/// Sets SO_ZEROCOPY (Linux 4.14 and later), so sends may carry MSG_ZEROCOPY; false where the
/// kernel refuses it.
fn enable_zerocopy(stream: &TcpStream) -> bool {
    raw::set_int(stream.as_fd(), libc::SOL_SOCKET, libc::SO_ZEROCOPY, 1).is_ok()
}

/// A connection that carries one transaction or one user's requests (rr's TCP_CRR, http):
/// TCP_NODELAY; a read timeout of `read_timeout`, so a blocked read looks at the stop flags;
/// with `reset`, closed with a reset (SO_LINGER 0), so no TIME_WAIT is left per transaction.
/// Set on every new connection inside the loop, so nothing is read back and a refusal is
/// ignored (the connection still works, only slower to notice a stop).
pub(crate) fn per_connection(socket: &impl AsFd, read_timeout: Option<Duration>, reset: bool) {
    let s = SockRef::from(socket);
    let _ = s.set_tcp_nodelay(true);
    if read_timeout.is_some() {
        let _ = s.set_read_timeout(read_timeout);
    }
    if reset {
        let _ = s.set_linger(Some(Duration::ZERO));
    }
}

/// SO_BUSY_POLL as the kernel holds it, microseconds (None where it cannot be read).
pub(crate) fn busy_poll_us(socket: &impl AsFd) -> Option<u32> {
    SockRef::from(socket).busy_poll().ok()
}

/// Sets UDP_SEGMENT (UDP GSO) so one send of n x `size` bytes leaves as n datagrams; false where
/// the kernel has no such option.
pub(crate) fn enable_gso(socket: &UdpSocket, size: u16) -> bool {
    raw::set_int(
        socket.as_fd(),
        libc::SOL_UDP,
        libc::UDP_SEGMENT,
        libc::c_int::from(size),
    )
    .is_ok()
}

/// Sets UDP_SEGMENT to 0: each send is one datagram again.
pub(crate) fn disable_gso(socket: &UdpSocket) -> bool {
    raw::set_int(socket.as_fd(), libc::SOL_UDP, libc::UDP_SEGMENT, 0).is_ok()
}

/// Sets UDP_GRO: the kernel hands up trains of datagrams in one message; false where it has no
/// such option.
pub(crate) fn enable_gro(socket: &UdpSocket) -> bool {
    raw::set_int(socket.as_fd(), libc::SOL_UDP, libc::UDP_GRO, 1).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ByteSize;
    use std::net::TcpListener;

    #[test]
    fn grants_are_read_back_and_tcp_info_is_there() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (_a, _) = l.accept().expect("accept");
        let mut spec = TcpSpec::new();
        spec.window_bytes = Some(ByteSize(256 << 10));
        spec.nodelay = true;
        let g = configure(&c, &spec, Role::Receive).expect("configure");
        // Linux doubles SO_RCVBUF for its own bookkeeping (socket(7)), capped by rmem_max.
        assert!(g.rcvbuf_bytes >= 4096, "{g:?}");
        assert!(g.nodelay);
        assert!(!g.congestion.is_empty());
        let info = tcp_info(&c).expect("TCP_INFO on a connected socket");
        assert!(info.mss_bytes > 0);
    }

    #[test]
    fn issue_28_a_blocking_reader_waits_for_whole_buffers_capped_by_a_fixed_window() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (a, _) = l.accept().expect("accept");
        let lowat = |s: &TcpStream| raw::get_int(s.as_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT).expect("read");
        assert_eq!(lowat(&a), 1, "the kernel's default");
        wake_for_whole_reads(&a, 128 << 10);
        assert_eq!(lowat(&a), 128 << 10);
        // A fixed 64 KiB buffer (doubled by the kernel) caps the mark at half of it.
        raw::set_buffer(c.as_fd(), Buffer::Receive, 64 << 10).expect("SO_RCVBUF");
        wake_for_whole_reads(&c, 128 << 10);
        let rcvbuf = SockRef::from(&c).recv_buffer_size().expect("rcvbuf") as i32;
        assert_eq!(lowat(&c), rcvbuf / 2);
    }

    #[test]
    fn a_dscp_mark_is_set_and_read_back_on_ipv4_and_ipv6_sockets() {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        let (a, _) = l.accept().expect("accept");
        let mut g = SocketGrant::default();
        mark(&c, None, &mut g).expect("nothing to set");
        assert_eq!(g.dscp, None);
        mark(&c, Some(Dscp::EF), &mut g).expect("IP_TOS");
        assert_eq!(g.dscp, Some(Dscp::EF));
        let tos = |s: &TcpStream, level, opt| raw::get_int(s.as_fd(), level, opt).expect("read");
        assert_eq!(tos(&c, libc::IPPROTO_IP, libc::IP_TOS), 0xb8);
        assert_eq!(
            tos(&a, libc::IPPROTO_IP, libc::IP_TOS),
            0,
            "the other end keeps its own"
        );
        let u = UdpSocket::bind("127.0.0.1:0").expect("bind");
        mark(&u, Some(Dscp::BK), &mut g).expect("IP_TOS on UDP");
        assert_eq!(g.dscp, Some(Dscp::BK));
        // IPv6, where the host has it.
        if let Ok(u6) = UdpSocket::bind("[::1]:0") {
            mark(&u6, Some(Dscp::CS5), &mut g).expect("IPV6_TCLASS");
            assert_eq!(g.dscp, Some(Dscp::CS5));
            let tclass = raw::get_int(u6.as_fd(), libc::IPPROTO_IPV6, libc::IPV6_TCLASS).expect("read");
            assert_eq!(tclass, 0xa0);
        }
    }

    #[test]
    fn a_udp_grant_reads_buffers_only_and_busy_poll_reads_back() {
        let u = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let tuning = Tuning {
            rcvbuf_bytes: Some(1 << 20),
            timestamps: true,
            ..Tuning::default()
        };
        let g = apply(&u, &tuning, Proto::Udp).expect("apply");
        assert!(g.rcvbuf_bytes >= 4096, "{g:?}");
        assert!(g.congestion.is_empty() && g.mss_bytes == 0 && !g.nodelay, "{g:?}");
        assert!(busy_poll_us(&u).is_some(), "SO_BUSY_POLL reads back on Linux");
    }
}
