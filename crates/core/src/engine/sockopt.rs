//! Socket options for data connections: set what the spec asks, read back what the kernel
//! granted, and read TCP_INFO. Everything here runs before the clock starts, except
//! `tcp_info`, which the sampling thread calls once per interval.

use super::EngineError;
use crate::result::{Role, SocketGrant, StreamReport, TcpSnapshot};
use crate::spec::TcpSpec;
use crate::units::ByteSize;
use socket2::SockRef;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// How long a blocking read or write waits before the worker looks at its stop flags again.
pub(crate) const POLL_SLICE: Duration = Duration::from_millis(100);

fn opt(option: &'static str) -> impl FnOnce(std::io::Error) -> EngineError {
    move |source| EngineError::SocketOption { option, source }
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

/// Applies the spec to a connected data socket for the given role and reads back the grant.
pub fn configure(stream: &TcpStream, spec: &TcpSpec, role: Role) -> Result<SocketGrant, EngineError> {
    let s = SockRef::from(stream);
    match role {
        Role::Receive => {
            if let Some(w) = spec.window_bytes {
                s.set_recv_buffer_size(w.0 as usize).map_err(opt("SO_RCVBUF"))?;
                force_past_max(stream, SO_RCVBUFFORCE, w.0, s.recv_buffer_size().unwrap_or(0));
            }
        }
        Role::Send => {
            if let Some(b) = spec.sndbuf_bytes {
                s.set_send_buffer_size(b.0 as usize).map_err(opt("SO_SNDBUF"))?;
                force_past_max(stream, SO_SNDBUFFORCE, b.0, s.send_buffer_size().unwrap_or(0));
            }
        }
    }
    if let Some(cc) = &spec.congestion {
        s.set_tcp_congestion(cc.as_bytes()).map_err(opt("TCP_CONGESTION"))?;
    }
    if spec.nodelay {
        s.set_tcp_nodelay(true).map_err(opt("TCP_NODELAY"))?;
    }
    // Workers block at most one slice in a call, then look at their stop flags.
    s.set_read_timeout(Some(POLL_SLICE)).map_err(opt("SO_RCVTIMEO"))?;
    s.set_write_timeout(Some(POLL_SLICE)).map_err(opt("SO_SNDTIMEO"))?;
    Ok(grant(stream))
}

// Not exported by the libc crate for every Linux target; the values are the same on all of them.
pub(crate) const SO_SNDBUFFORCE: libc::c_int = 32;
pub(crate) const SO_RCVBUFFORCE: libc::c_int = 33;

/// SO_RCVBUF and SO_SNDBUF stop at net.core.rmem_max / wmem_max (212992 by default), far below
/// a long path's bandwidth-delay product. Where the kernel granted less than asked (it reports
/// double the usable size), the *FORCE variant goes past the cap when we have CAP_NET_ADMIN;
/// without it the grant stays as it was and the result shows what was granted.
fn force_past_max(stream: &TcpStream, option: libc::c_int, asked: u64, granted: usize) {
    if (granted as u64) >= asked.saturating_mul(2) {
        return;
    }
    let value = libc::c_int::try_from(asked).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid fd and a pointer to an int that lives through the call.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Sets a socket buffer (`option` SO_RCVBUF or SO_SNDBUF) to `bytes`, and past the sysctl cap
/// with `force_option` (SO_RCVBUFFORCE, SO_SNDBUFFORCE) where the process may; the grant is read
/// back by the caller.
pub(crate) fn set_buffer(
    fd: std::os::fd::RawFd,
    option: libc::c_int,
    force_option: libc::c_int,
    bytes: usize,
) -> std::io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let set = |opt: libc::c_int| {
        // SAFETY: a valid fd and a pointer to an int that lives through the call.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if set(option) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut got: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes an int we own, within `len`.
    unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            (&mut got as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if (got as u64) < (bytes as u64).saturating_mul(2) {
        // Without CAP_NET_ADMIN this fails and the capped grant stands.
        set(force_option);
    }
    Ok(())
}

/// What the kernel granted on a socket.
pub(crate) fn grant(stream: &TcpStream) -> SocketGrant {
    let s = SockRef::from(stream);
    let congestion = s
        .tcp_congestion()
        .map(|name| String::from_utf8_lossy(&name).trim_end_matches('\0').to_string())
        .unwrap_or_default();
    SocketGrant {
        sndbuf_bytes: s.send_buffer_size().unwrap_or(0) as u64,
        rcvbuf_bytes: s.recv_buffer_size().unwrap_or(0) as u64,
        mss_bytes: s.tcp_mss().unwrap_or(0),
        congestion,
        nodelay: s.tcp_nodelay().unwrap_or(false),
    }
}

/// What was asked of this end's sockets, for [`grant_notes`]: a receive window, a send buffer,
/// an MSS (each None when not asked).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Asked {
    pub window: Option<ByteSize>,
    pub sndbuf: Option<ByteSize>,
    pub mss_bytes: Option<u32>,
}

/// A note for every setting the kernel granted differently from what was asked, with the
/// granted value, so that no cap passes silently (issue 13). Buffers: the kernel reports double
/// what it grants (socket(7)) and caps a plain SO_RCVBUF/SO_SNDBUF at net.core.rmem_max /
/// wmem_max; the smallest grant over this end's streams of that role is the one named. MSS:
/// the kernel's own figure leaves out TCP options (up to 40 bytes) and follows the path MTU and
/// the peer's MSS, so only a larger difference, or a larger MSS, is noted.
pub(crate) fn grant_notes(asked: Asked, streams: &[StreamReport]) -> Vec<String> {
    let mut notes = Vec::new();
    let least = |role: Role, bytes: fn(&SocketGrant) -> u64| {
        streams
            .iter()
            .filter(|s| s.role == role)
            .map(|s| bytes(&s.socket) / 2)
            .min()
    };
    let buffers = [
        (
            "--window",
            asked.window,
            "net.core.rmem_max",
            least(Role::Receive, |g| g.rcvbuf_bytes),
        ),
        (
            "--sndbuf",
            asked.sndbuf,
            "net.core.wmem_max",
            least(Role::Send, |g| g.sndbuf_bytes),
        ),
    ];
    for (flag, want, sysctl, got) in buffers {
        if let (Some(want), Some(got)) = (want, got)
            && got < want.0
        {
            notes.push(format!(
                "{flag} {want} asked, {} granted ({sysctl}; run as root or raise it)",
                ByteSize(got)
            ));
        }
    }
    if let Some(want) = asked.mss_bytes
        && let Some(got) = streams.iter().map(|s| s.socket.mss_bytes).filter(|m| *m > 0).min()
        && (got + 40 < want || got > want)
    {
        notes.push(format!(
            "--mss {want} asked, {got} in use (the path MTU or the peer's MSS is lower)"
        ));
    }
    notes
}

/// TCP_INFO now, or None where the kernel refuses it.
pub(crate) fn tcp_info(fd: &impl AsRawFd) -> Option<TcpSnapshot> {
    // SAFETY: tcp_info is plain data; zeroed is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    Some(TcpSnapshot {
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
        cwnd_bytes: u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss),
        retransmits: u64::from(info.tcpi_total_retrans),
        mss_bytes: info.tcpi_snd_mss,
        pmtu_bytes: info.tcpi_pmtu,
        snd_wnd_bytes: info.tcpi_snd_wnd,
        busy_us: info.tcpi_busy_time,
        rwnd_limited_us: info.tcpi_rwnd_limited,
        sndbuf_limited_us: info.tcpi_sndbuf_limited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{ErrorCounts, StreamEnd};
    use std::net::TcpListener;

    fn stream(role: Role, socket: SocketGrant) -> StreamReport {
        StreamReport {
            stream: 0,
            role,
            bytes: 0,
            ops: 0,
            seconds: 0.0,
            total_bytes: 0,
            socket,
            tcp: None,
            errors: ErrorCounts::default(),
            end: StreamEnd::Deadline,
            udp_send: None,
            udp_receive: None,
            rr: None,
        }
    }

    #[test]
    fn issue_13_a_capped_window_is_noted_with_its_grant() {
        let capped = SocketGrant {
            rcvbuf_bytes: 2 * (8 << 20),
            sndbuf_bytes: 2 * (4 << 20),
            mss_bytes: 1448,
            ..Default::default()
        };
        let streams = [stream(Role::Receive, capped.clone()), stream(Role::Send, capped)];
        let asked = Asked {
            window: Some(ByteSize(16 << 20)),
            sndbuf: Some(ByteSize(4 << 20)),
            mss_bytes: Some(1460),
        };
        assert_eq!(
            grant_notes(asked, &streams),
            ["--window 16 MiB asked, 8 MiB granted (net.core.rmem_max; run as root or raise it)"]
        );
        let asked = Asked {
            window: Some(ByteSize(8 << 20)),
            sndbuf: Some(ByteSize(8 << 20)),
            mss_bytes: Some(9000),
        };
        assert_eq!(
            grant_notes(asked, &streams),
            [
                "--sndbuf 8 MiB asked, 4 MiB granted (net.core.wmem_max; run as root or raise it)",
                "--mss 9000 asked, 1448 in use (the path MTU or the peer's MSS is lower)"
            ]
        );
        assert!(
            grant_notes(Asked::default(), &streams).is_empty(),
            "nothing asked, nothing noted"
        );
    }

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
}
