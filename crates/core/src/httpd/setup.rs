//! What the workers share, made before they start: the served files opened and named, the
//! listening sockets, the pattern's memfd, the open-files limit, SIGPIPE ignored.

use super::{HttpdError, ServedFile};
use socket2::{Domain, Protocol, Socket, Type};
use std::fs::File;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::FromRawFd;
use std::path::PathBuf;

pub(super) const BACKLOG: i32 = 4096;
pub(super) type Names = Box<[Box<[u8]>]>;

pub(super) fn open_files(paths: &[PathBuf]) -> Result<(Names, Box<[ServedFile]>), HttpdError> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<Box<[u8]>> = Vec::with_capacity(paths.len());
    let mut files = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let file = File::open(path).map_err(|source| HttpdError::File {
            path: path.clone(),
            source,
        })?;
        let meta = file.metadata().map_err(|source| HttpdError::File {
            path: path.clone(),
            source,
        })?;
        let name = path.file_name().map(|n| n.as_bytes()).unwrap_or_default();
        if !meta.is_file() || name.is_empty() {
            return Err(HttpdError::NotAFile { path: path.clone() });
        }
        if let Some(j) = names.iter().position(|n| **n == *name) {
            return Err(HttpdError::SameName {
                name: String::from_utf8_lossy(name).into_owned(),
                first: paths[j].clone(),
                second: paths[i].clone(),
            });
        }
        names.push(name.into());
        files.push(ServedFile {
            file,
            bytes: meta.len(),
        });
    }
    Ok((names.into(), files.into()))
}

/// A non-blocking listening socket on `addr`, in the port's SO_REUSEPORT group if `group`.
pub(super) fn listen(addr: SocketAddr, group: bool) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Restarts find the port free although connections of the last run are in TIME_WAIT.
    socket.set_reuse_address(true)?;
    if group {
        socket.set_reuse_port(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    if group {
        socket.listen(BACKLOG)?;
    }
    Ok(socket.into())
}

pub(super) fn pattern_memfd(pattern: &[u8]) -> io::Result<File> {
    // SAFETY: the name is a NUL-terminated string; memfd_create returns a new descriptor or -1.
    let fd = unsafe { libc::memfd_create(c"linerate-http-pattern".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just created and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(pattern)?;
    Ok(file)
}

/// Raises the soft RLIMIT_NOFILE to `wanted` (capped at the hard limit): the usual soft limit
/// of 1024 would refuse connections long before `max_connections`. Never lowers it. Returns
/// the soft limit in force afterwards (`usize::MAX` when it cannot be read).
pub(super) fn raise_open_files_limit(wanted: usize) -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return usize::MAX;
    }
    let target = (wanted as libc::rlim_t).min(limit.rlim_max);
    if target > limit.rlim_cur {
        let old = limit.rlim_cur;
        limit.rlim_cur = target;
        // SAFETY: setrlimit reads the struct we own; a failure leaves the old limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            limit.rlim_cur = old;
        }
    }
    usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
}

/// `sendfile` into a socket whose client has gone raises SIGPIPE (unlike `sendmsg`, it takes
/// no MSG_NOSIGNAL). Rust programs start with it ignored; make sure nobody restored the default.
pub(super) fn ignore_sigpipe() {
    // SAFETY: a null new action only reads the current one into `old`, which we own.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Requests: parsing and routing, pure functions of the bytes received.
