//! Response bodies: where the rest of one comes from (the pattern in memory, the pattern's memfd
//! or a served file) and the two syscalls that send it, `sendmsg` (head and small bodies in one
//! call) and `sendfile(2)` (large bodies and files from the page cache).

use super::BODY_PATTERN;
use std::io;
use std::os::fd::RawFd;

/// Bodies from this size on go by `sendfile` from the memfd: one copy fewer, at the price of a
/// second syscall (the head goes first with `MSG_MORE`), which pays off past a few pages.
pub(super) const SENDFILE_MIN_BYTES: u64 = 32 * 1024;
/// `sendfile` moves at most 0x7ffff000 bytes a call; stay well below.
pub(super) const SENDFILE_MAX_CHUNK: u64 = 1 << 30;
/// The slice of the pattern buffer that continues a body at `offset`, at most `left` long.
pub(super) fn pattern_slice(pattern: &[u8], offset: u64, left: u64) -> &[u8] {
    let start = (offset % BODY_PATTERN.len() as u64) as usize;
    let len = (pattern.len() - start).min(usize::try_from(left).unwrap_or(usize::MAX));
    &pattern[start..start + len]
}

// ---------------------------------------------------------------------------------------------
// Connections.

/// Where the rest of a response body comes from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Body {
    None,
    /// From the pattern buffer, continuing at body offset `offset`.
    Pattern {
        offset: u64,
        left: u64,
    },
    /// By `sendfile` from `fd` at `pos`, which goes back to 0 at `wrap` (the pattern memfd; a
    /// file never wraps). `fd` belongs to [`Shared`], which outlives every connection.
    File {
        fd: RawFd,
        pos: u64,
        left: u64,
        wrap: u64,
    },
    /// From the connection's own document buffer (a responsiveness configuration, an upload's
    /// count), continuing at `offset`.
    Doc {
        offset: usize,
        left: u64,
    },
}

impl Body {
    pub(super) fn left(&self) -> u64 {
        match *self {
            Body::None => 0,
            Body::Pattern { left, .. } | Body::File { left, .. } | Body::Doc { left, .. } => left,
        }
    }

    pub(super) fn advance(&mut self, n: u64) {
        match self {
            Body::None => {}
            Body::Pattern { offset, left } => {
                *offset += n;
                *left -= n;
            }
            Body::Doc { offset, left } => {
                *offset += n as usize;
                *left -= n;
            }
            Body::File { pos, left, wrap, .. } => {
                *pos += n;
                *left -= n;
                if *pos == *wrap {
                    *pos = 0;
                }
            }
        }
    }
}

/// `sendmsg` of one or two slices, never raising SIGPIPE, never blocking.
pub(super) fn send(fd: RawFd, a: &[u8], b: &[u8], more: bool) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: a.as_ptr() as *mut libc::c_void,
            iov_len: a.len(),
        },
        libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        },
    ];
    // SAFETY: msghdr is plain data; all-zero is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if b.is_empty() { 1 } else { 2 };
    let mut flags = libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT;
    if more {
        flags |= libc::MSG_MORE;
    }
    // SAFETY: the iovecs point into `a` and `b`, which outlive the call; sendmsg only reads them.
    let n = unsafe { libc::sendmsg(fd, &msg, flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(super) fn sendfile(out: RawFd, src: RawFd, pos: u64, count: u64) -> io::Result<usize> {
    let mut offset = pos as libc::off_t;
    // SAFETY: both descriptors are open for the duration (the connection's socket and a file
    // owned by Shared); sendfile reads and updates only `offset`, which we own.
    let n = unsafe { libc::sendfile(out, src, &mut offset, count as usize) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `pread(2)`: up to `buf.len()` bytes of `fd` at `pos` (a served file's body over TLS).
pub(super) fn pread(fd: RawFd, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    // SAFETY: `buf` is ours and writable for its length; `fd` is open (owned by Shared).
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), pos as libc::off_t) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

// ---------------------------------------------------------------------------------------------
// Workers.

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpd::PATTERN_BYTES;

    #[test]
    fn pattern_slices_continue_the_body() {
        let pattern: Vec<u8> = (0..PATTERN_BYTES).map(|i| BODY_PATTERN[i % 64]).collect();
        for offset in [0u64, 1, 63, 64, 1_000_003, 5 << 20] {
            let s = pattern_slice(&pattern, offset, 100);
            assert_eq!(s.len(), 100);
            for (k, b) in s.iter().enumerate() {
                assert_eq!(*b, BODY_PATTERN[((offset + k as u64) % 64) as usize]);
            }
        }
        assert_eq!(pattern_slice(&pattern, 63, u64::MAX).len(), PATTERN_BYTES - 63);
        assert_eq!(pattern_slice(&pattern, 0, 0).len(), 0);
    }
}
