//! `--zerocopy` in a sending loop: a [`Sender`] is how a worker hands its buffer to a
//! sending socket, by copy (write(2)), by sendfile(2) from a memory file holding the same bytes
//! (as `iperf3 -Z` does), or by send(2) with MSG_ZEROCOPY, whose completions it reads from the
//! socket's error queue into a stack buffer (nothing allocated per write).
//!
//! In: the path the socket was granted (`SocketGrant::zerocopy`, set by the socket-option base),
//! the worker's send buffer. Out: bytes accepted per call, like write(2), and a [`Tally`] of
//! MSG_ZEROCOPY completions (how many the kernel reported as copied: on loopback it always
//! copies, Documentation/networking/msg_zerocopy.rst) that the runner's notes report. Setup
//! (the memory file) runs before the clock; a setup failure falls back to copying, counted.

use crate::spec::ZeroCopy;
use std::fs::File;
use std::io::{self, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

// linux/errqueue.h; not exported by the libc crate for every target.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
/// MSG_ZEROCOPY sends not yet completed before the loop reads the error queue: each holds
/// option memory (net.core.optmem_max) until then, and past it the kernel answers ENOBUFS.
const REAP_PENDING: u32 = 32;

/// What the workers of one run saw of zero-copy sends, for the result's notes.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// MSG_ZEROCOPY sends the kernel reported complete.
    pub completed: AtomicU64,
    /// Of those, the ones it reported as copied (SO_EE_CODE_ZEROCOPY_COPIED).
    pub copied: AtomicU64,
    /// Sockets whose worker could not set up the path asked for and copied instead.
    pub fell_back: AtomicU64,
}

/// How one sending socket's bytes reach the kernel.
pub(super) enum Sender {
    Copy,
    /// A memory file holding the send buffer; sendfile reads it from the buffer's offset.
    Sendfile(File),
    /// MSG_ZEROCOPY: sends numbered from 0 by the kernel; `next` is the next send's number and
    /// `done` how many have completed (completions arrive in order on TCP).
    Msg {
        next: u32,
        done: u32,
        completed: u64,
        copied: u64,
    },
}

impl Sender {
    /// The sender for a socket granted `path`, with `buf` the bytes every write sends. Falls
    /// back to copying (counted in `tally`) when the memory file cannot be made.
    pub fn new(path: Option<ZeroCopy>, buf: &[u8], tally: &Tally) -> Sender {
        match path {
            None => Sender::Copy,
            Some(ZeroCopy::Msg) => Sender::Msg {
                next: 0,
                done: 0,
                completed: 0,
                copied: 0,
            },
            Some(ZeroCopy::Sendfile) => match memory_file(buf) {
                Ok(f) => Sender::Sendfile(f),
                Err(_) => {
                    tally.fell_back.fetch_add(1, Relaxed);
                    Sender::Copy
                }
            },
        }
    }

    /// Sends `buf[off..]` (the memory file holds the same bytes): one call, the bytes the kernel
    /// took, or the error (WouldBlock when MSG_ZEROCOPY ran out of option memory and the error
    /// queue was read: call again).
    #[inline]
    pub fn send(&mut self, mut sock: &TcpStream, buf: &[u8], off: usize) -> io::Result<usize> {
        match self {
            Sender::Copy => sock.write(&buf[off..]),
            Sender::Sendfile(f) => {
                let mut at = off as libc::off_t;
                // SAFETY: two descriptors that live through the call and an offset we own; the
                // kernel reads the file from `at` and advances our copy of it only.
                let n = unsafe { libc::sendfile(sock.as_raw_fd(), f.as_raw_fd(), &mut at, buf.len() - off) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            }
            Sender::Msg { next, done, .. } => {
                if next.wrapping_sub(*done) >= REAP_PENDING {
                    self.reap(sock, false);
                }
                let rest = &buf[off..];
                // SAFETY: the slice lives as long as the worker's buffer, which outlives every
                // send of the stream; the kernel keeps its own references to the pages until it
                // reports the send complete.
                let n = unsafe { libc::send(sock.as_raw_fd(), rest.as_ptr().cast(), rest.len(), libc::MSG_ZEROCOPY) };
                if n >= 0 {
                    if let Sender::Msg { next, .. } = self {
                        *next = next.wrapping_add(1);
                    }
                    return Ok(n as usize);
                }
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    // Out of option memory: wait for completions, then the caller sends again.
                    Some(libc::ENOBUFS) => {
                        self.reap(sock, true);
                        Err(io::ErrorKind::WouldBlock.into())
                    }
                    // A full socket: read what completed meanwhile, so that an event loop's
                    // epoll (which always reports a non-empty error queue) waits for room.
                    Some(libc::EAGAIN) => {
                        self.reap(sock, false);
                        Err(e)
                    }
                    _ => Err(e),
                }
            }
        }
    }

    /// Reads MSG_ZEROCOPY completions from the error queue; with `wait`, first waits up to 10
    /// ms for one. A control buffer on the stack: nothing is allocated.
    fn reap(&mut self, sock: &TcpStream, wait: bool) {
        let Sender::Msg {
            done,
            completed,
            copied,
            ..
        } = self
        else {
            return;
        };
        let fd = sock.as_raw_fd();
        if wait {
            let mut p = libc::pollfd {
                fd,
                events: 0, // POLLERR is always reported
                revents: 0,
            };
            // SAFETY: one pollfd we own.
            unsafe { libc::poll(&mut p, 1, 10) };
        }
        let mut control = [0u64; 16]; // 128 bytes, aligned for cmsghdr
        loop {
            // SAFETY: msghdr is plain data; every pointer set below is to memory we own that
            // outlives the call.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control);
            // SAFETY: as above; MSG_ERRQUEUE reads only the control data.
            let rc = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
            if rc < 0 {
                return;
            }
            // SAFETY: CMSG_FIRSTHDR/NXTHDR walk the control buffer the kernel filled, within
            // msg_controllen.
            let mut cm = unsafe { libc::CMSG_FIRSTHDR(&msg) };
            while !cm.is_null() {
                // SAFETY: a header inside the buffer; its data is a sock_extended_err for
                // IP_RECVERR / IPV6_RECVERR (ip(7)), read unaligned.
                let (level, kind) = unsafe { ((*cm).cmsg_level, (*cm).cmsg_type) };
                let ours = (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                    || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR);
                if ours {
                    // SAFETY: as above.
                    let ee: libc::sock_extended_err = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cm).cast()) };
                    if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY && ee.ee_errno == 0 {
                        // ee_info..=ee_data: the numbers of the sends completed.
                        let n = ee.ee_data.wrapping_sub(ee.ee_info).wrapping_add(1);
                        *done = ee.ee_data.wrapping_add(1);
                        *completed += u64::from(n);
                        if ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                            *copied += u64::from(n);
                        }
                    }
                }
                // SAFETY: as above.
                cm = unsafe { libc::CMSG_NXTHDR(&msg, cm) };
            }
        }
    }

    /// At the stream's end (its side shut): reads the completions still due, waiting at most
    /// about 100 ms in all, and adds them to `tally`.
    pub fn finish(&mut self, sock: &TcpStream, tally: &Tally) {
        for _ in 0..10 {
            match self {
                Sender::Msg { next, done, .. } if next != done => self.reap(sock, true),
                _ => break,
            }
        }
        if let Sender::Msg { completed, copied, .. } = self {
            tally.completed.fetch_add(*completed, Relaxed);
            tally.copied.fetch_add(*copied, Relaxed);
        }
    }
}

/// A memory file (memfd_create(2)) holding `buf`, for sendfile.
fn memory_file(buf: &[u8]) -> io::Result<File> {
    // SAFETY: a NUL-terminated name; the call returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"linerate-zerocopy".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just created and owned by nothing else.
    let mut f = unsafe { File::from_raw_fd(fd) };
    f.write_all(buf)?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let c = TcpStream::connect(l.local_addr().expect("addr")).expect("connect");
        (c, l.accept().expect("accept").0)
    }

    /// Every path delivers the buffer's bytes, in order, from any offset.
    #[test]
    fn issue_28_every_path_sends_the_buffers_bytes() {
        let buf: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
        for path in [None, Some(ZeroCopy::Sendfile), Some(ZeroCopy::Msg)] {
            let (tx, mut rx) = pair();
            if path == Some(ZeroCopy::Msg) {
                crate::engine::sockopt::set_int(std::os::fd::AsFd::as_fd(&tx), libc::SOL_SOCKET, libc::SO_ZEROCOPY, 1)
                    .expect("SO_ZEROCOPY on loopback TCP");
            }
            let tally = Tally::default();
            let mut s = Sender::new(path, &buf, &tally);
            let reader = std::thread::spawn(move || {
                let mut got = Vec::new();
                rx.read_to_end(&mut got).expect("read");
                got
            });
            let mut sent = 0;
            for round in 0..3 {
                let mut off = if round == 1 { 1234 } else { 0 };
                while off < buf.len() {
                    match s.send(&tx, &buf, off) {
                        Ok(k) => off += k,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => panic!("{path:?}: {e}"),
                    }
                }
                sent += buf.len() - if round == 1 { 1234 } else { 0 };
            }
            tx.shutdown(std::net::Shutdown::Write).expect("shutdown");
            s.finish(&tx, &tally);
            let got = reader.join().expect("join");
            assert_eq!(got.len(), sent, "{path:?}");
            assert_eq!(&got[..buf.len()], &buf[..], "{path:?}");
            assert_eq!(&got[buf.len()..2 * buf.len() - 1234], &buf[1234..], "{path:?}");
            if path == Some(ZeroCopy::Msg) {
                assert!(tally.completed.load(Relaxed) > 0, "completions read");
            }
        }
    }
}
