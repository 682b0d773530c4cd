//! The data streams of a test against an iperf3 server, opened after CREATE_STREAMS: TCP
//! connections that open with the cookie, UDP sockets announced by the hello; each configured
//! for its role as the kind's own client file does against an agent.

use crate::client::session::{ClientError, ClientOptions, connect};
use crate::engine::{sockopt, tcp, udp};
use crate::proto::iperf3::{self as wire, Iperf3Error, UDP_HELLO};
use crate::result::Role;
use crate::spec::{TcpSpec, UdpSpec};
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// How often a UDP hello is sent again while its answer does not come.
const HELLO_RESEND: Duration = Duration::from_millis(500);

/// The data streams, ready for their engine.
pub(super) enum Data<'s> {
    Tcp((&'s TcpSpec, Vec<tcp::DataStream>)),
    Udp((&'s UdpSpec, Vec<udp::UdpStream>)),
}

/// TCP data connections: each connected (its options set first), the cookie sent, then
/// configured for its role, as `client::tcp` does against an agent.
pub(super) fn tcp_streams<'s>(
    spec: &'s TcpSpec,
    ours: &[Role],
    peer: SocketAddr,
    opts: &ClientOptions,
    cookie: &[u8; wire::COOKIE_LEN],
) -> Result<(&'s TcpSpec, Vec<tcp::DataStream>), ClientError> {
    let mut streams = Vec::with_capacity(ours.len());
    for (i, role) in ours.iter().enumerate() {
        let mut sock = connect(peer, opts, |sock| sockopt::before_connect(sock, spec))?;
        let data = |source| ClientError::Data { peer, source };
        sock.set_write_timeout(Some(opts.connect_timeout)).map_err(data)?;
        sock.write_all(cookie).map_err(data)?;
        sock.set_write_timeout(None).map_err(data)?;
        let grant = sockopt::configure(&sock, spec, *role)?;
        streams.push(tcp::DataStream {
            id: i as u16,
            role: *role,
            socket: sock,
            grant,
        });
    }
    Ok((spec, streams))
}

/// UDP data sockets, each connected to the server's port and announced by the hello (sent
/// again every [`HELLO_RESEND`] until answered, within the connect timeout). The second value:
/// some answer was the one servers before 3.17 give (987654321 in host order).
pub(super) fn udp_streams<'s>(
    spec: &'s UdpSpec,
    ours: &[Role],
    peer: SocketAddr,
    local_ip: std::net::IpAddr,
    opts: &ClientOptions,
) -> Result<((&'s UdpSpec, Vec<udp::UdpStream>), bool), ClientError> {
    let mut streams = Vec::with_capacity(ours.len());
    let mut old_reply = false;
    for (i, role) in ours.iter().enumerate() {
        let data = |source| ClientError::Data { peer, source };
        let socket = UdpSocket::bind((local_ip, 0)).map_err(data)?;
        socket.connect(peer).map_err(data)?;
        let answer = hello(&socket, peer, opts.connect_timeout)?;
        old_reply |= answer == 987_654_321u32.to_ne_bytes();
        let grant = udp::configure(&socket, spec, *role)?;
        streams.push(udp::UdpStream {
            id: i as u16,
            wire_id: i as u16,
            test_id: 0,
            role: *role,
            socket,
            grant,
            framing: udp::Framing::Iperf3 { counters_64bit: false },
        });
    }
    Ok(((spec, streams), old_reply))
}

/// Sends the UDP hello and returns the server's four-byte answer.
fn hello(socket: &UdpSocket, peer: SocketAddr, within: Duration) -> Result<[u8; 4], ClientError> {
    let data = |source| ClientError::Data { peer, source };
    let until = Instant::now() + within;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Iperf3Error::Timeout {
                peer,
                what: "waiting for the answer to a UDP stream's hello",
                seconds: within.as_secs_f64(),
            }
            .into());
        }
        socket.send(&UDP_HELLO).map_err(data)?;
        socket
            .set_read_timeout(Some(left.min(HELLO_RESEND).max(Duration::from_millis(1))))
            .map_err(data)?;
        let mut answer = [0u8; 4];
        match socket.recv(&mut answer) {
            Ok(4) => return Ok(answer),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            // Nothing listens on that UDP port (ICMP port unreachable).
            Err(e) => return Err(data(e)),
        }
    }
}
