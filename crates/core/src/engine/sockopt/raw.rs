//! The kernel calls behind the socket-option base: the one place that calls setsockopt(2) and
//! getsockopt(2) with libc (what socket2 does not cover: the *FORCE buffers, UDP_SEGMENT,
//! UDP_GRO, SO_TIMESTAMPNS, TCP_INFO), and the SIOCOUTQ ioctl. In: a borrowed descriptor and an option; out: the kernel's
//! answer. What to set and when is left to `sockopt`.

use crate::result::TcpSnapshot;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

// Not exported by the libc crate for every Linux target; the values are the same on all of them.
const SO_SNDBUFFORCE: libc::c_int = 32;
const SO_RCVBUFFORCE: libc::c_int = 33;

/// Sets an int option.
pub(crate) fn set_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    option: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a descriptor borrowed for the call and a pointer to an int that lives through it,
    // with its own length.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads an int option.
pub(crate) fn get_int(fd: BorrowedFd<'_>, level: libc::c_int, option: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into an int we own.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            option,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the TOS byte (IPv4's IP_TOS) or the traffic class (IPv6's IPV6_TCLASS) of a socket,
/// and reads it back as the kernel holds it. An IPv6 socket also gets IP_TOS, best effort: what
/// it sends to an IPv4-mapped peer leaves as IPv4 and takes its byte from there (ip(7), ipv6(7)).
pub(crate) fn set_tos(fd: BorrowedFd<'_>, tos: u8) -> io::Result<u8> {
    let value = libc::c_int::from(tos);
    if get_int(fd, libc::SOL_SOCKET, libc::SO_DOMAIN)? == libc::AF_INET6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, value)?;
        let _ = set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, value);
        get_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS).map(|v| v as u8)
    } else {
        set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, value)?;
        get_int(fd, libc::IPPROTO_IP, libc::IP_TOS).map(|v| v as u8)
    }
}

/// Which socket buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Buffer {
    Receive,
    Send,
}

/// Sets a socket buffer to `bytes` (an error if the plain option fails), then, where the kernel
/// granted less than asked, past the sysctl cap. SO_RCVBUF and SO_SNDBUF stop at
/// net.core.rmem_max / wmem_max (212992 by default), far below a long path's bandwidth-delay
/// product; the kernel reports double the usable size (socket(7)), so a grant under twice the
/// ask was capped. The *FORCE variant goes past the cap with CAP_NET_ADMIN; without it that call
/// fails and the capped grant stands (the result shows what was granted).
pub(crate) fn set_buffer(fd: BorrowedFd<'_>, which: Buffer, bytes: u64) -> io::Result<()> {
    let (option, force) = match which {
        Buffer::Receive => (libc::SO_RCVBUF, SO_RCVBUFFORCE),
        Buffer::Send => (libc::SO_SNDBUF, SO_SNDBUFFORCE),
    };
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_int(fd, libc::SOL_SOCKET, option, value)?;
    let granted = get_int(fd, libc::SOL_SOCKET, option).unwrap_or(0);
    if (granted.max(0) as u64) < bytes.saturating_mul(2) {
        let _ = set_int(fd, libc::SOL_SOCKET, force, value);
    }
    Ok(())
}

/// The kernel's TCP_INFO of a socket, or None where it refuses it.
fn read_tcp_info(socket: &impl AsFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain data; zeroed is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(info)
}

/// Bytes a TCP socket has received from its peer, read by the application or not
/// (tcpi_bytes_received, RFC 4898; Linux 4.1 and later, 0 before).
pub(crate) fn tcp_bytes_received(socket: &impl AsFd) -> Option<u64> {
    read_tcp_info(socket).map(|i| i.tcpi_bytes_received)
}

/// TCP_INFO now, or None where the kernel refuses it.
pub(crate) fn tcp_info(socket: &impl AsFd) -> Option<TcpSnapshot> {
    let info = read_tcp_info(socket)?;
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

/// Bytes a socket has received and its reader has not yet taken (SIOCINQ, FIONREAD); None where
/// the kernel refuses the call.
pub(crate) fn receive_queue_bytes(socket: &impl AsFd) -> Option<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD (SIOCINQ) writes one int to the pointer, which outlives the call.
    let rc = unsafe { libc::ioctl(socket.as_fd().as_raw_fd(), libc::FIONREAD, &mut queued) };
    (rc == 0).then(|| queued.max(0) as u64)
}

/// Bytes a TCP socket holds that its peer has not yet acknowledged (SIOCOUTQ: sent but not
/// acked, and not yet sent); None where the kernel refuses the call.
pub(crate) fn send_queue_bytes(socket: &impl AsFd) -> Option<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int to the pointer, which outlives the call.
    let rc = unsafe { libc::ioctl(socket.as_fd().as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    (rc == 0).then(|| queued.max(0) as u64)
}
