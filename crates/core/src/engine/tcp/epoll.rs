//! The epoll(7) instance of both event loops (one-way streams in `event`, mixed transfers in
//! `mix_event`): created and filled before the clock starts; `wait` reuses one array of events,
//! so the loops allocate nothing per wake-up.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(super) struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// An instance with room for `capacity` events per wait.
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: epoll_create1 takes no pointers; a non-negative result is a new descriptor
        // that nothing else owns.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll {
            // SAFETY: `fd` was just returned by epoll_create1 and is owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    /// Makes `socket` non-blocking and registers it under `token` for `interest` (`EPOLLIN`,
    /// `EPOLLOUT`, ... as one mask).
    pub fn add(&self, socket: &TcpStream, token: usize, interest: i32) -> io::Result<()> {
        socket.set_nonblocking(true)?;
        let mut ev = libc::epoll_event {
            events: interest as u32,
            u64: token as u64,
        };
        // SAFETY: both descriptors are open for the call and `ev` is a valid epoll_event.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, socket.as_raw_fd(), &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `socket` (a stream that ended).
    pub fn remove(&self, socket: &TcpStream) {
        // SAFETY: both descriptors are open; EPOLL_CTL_DEL ignores the event pointer (null is
        // allowed since Linux 2.6.9).
        unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                socket.as_raw_fd(),
                std::ptr::null_mut(),
            );
        }
    }

    /// Waits at most `timeout_ms` and returns how many are ready; [`Epoll::token`] names each.
    /// 0 when the time passed with nothing ready or on EINTR (nothing else can fail here).
    pub fn wait(&mut self, timeout_ms: i32) -> usize {
        // SAFETY: `events` is a valid, writable array of `events.len()` epoll_events for the
        // whole call, and the epoll descriptor is open.
        let ready = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        ready.max(0) as usize
    }

    /// The token of the `k`-th ready event of the last wait.
    pub fn token(&self, k: usize) -> usize {
        self.events[k].u64 as usize
    }
}
