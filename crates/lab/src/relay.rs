//! The user-space link emulator, for kernels without sch_netem: a switch between the lab's
//! ports (veth ends in the lab's switch namespace) that holds each frame for its source host's
//! delay (plus jitter), releases some behind the next frame (reorder) and sends some twice
//! (duplicate). Loss and rate stay in the kernel (nftables, tbf).
//!
//! Frames are read with AF_PACKET sockets carrying a virtio-net header (PACKET_VNET_HDR), so TCP
//! segmentation-offload frames of up to 64 KiB cross whole and the kernel segments them on the
//! far side; reads and writes are batched (recvmmsg, sendmmsg), and a frame is copied once, into
//! its source port's byte ring. Release times follow an absolute schedule and the loop sleeps
//! in ppoll(2) with nanosecond timeouts until the next one is due.

use linerate_core::result::lab::LinkSpec;
pub use linerate_core::result::lab::PortStats;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const SO_SNDBUFFORCE: libc::c_int = 32;
const SO_RCVBUFFORCE: libc::c_int = 33;
/// struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset.
const VNET_HDR_LEN: usize = 10;
const VNET_F_DATA_VALID: u8 = 2;
const SLOT: usize = 65_536 + 256;
const BATCH: usize = 64;
/// How long before a release the loop stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(300);
/// A reordered frame waits this long at most for a frame to overtake it.
const REORDER_WAIT: Duration = Duration::from_millis(10);

/// What the relay is told to do, written by `lab up` as JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RelayConfig {
    /// Interface names in the switch namespace, one per host (port i serves host i+1).
    pub ports: Vec<String>,
    /// The egress spec of the host behind each port.
    pub specs: Vec<LinkSpec>,
    /// Where counters are written once a second.
    pub stats_path: PathBuf,
    /// Bytes each port's queue may hold.
    pub queue_bytes: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    off: usize,
    len: usize,
    release: Instant,
    dup: bool,
    /// Output port, or usize::MAX to flood.
    out: usize,
}

struct Queue {
    ring: Vec<u8>,
    /// Next write position; entries occupy [front.off, head) with wrap-around, in queue order.
    head: usize,
    entries: VecDeque<Entry>,
    /// A frame chosen to be reordered waits here (not in the ring) for the next one to pass it.
    held: Option<Entry>,
    held_buf: Vec<u8>,
    held_since: Option<Instant>,
    last_release: Option<Instant>,
    limit: usize,
}

impl Queue {
    fn new(bytes: usize, limit: usize) -> Queue {
        Queue {
            ring: vec![0; bytes],
            head: 0,
            entries: VecDeque::with_capacity(limit.min(1 << 16)),
            held: None,
            held_buf: vec![0; SLOT],
            held_since: None,
            last_release: None,
            limit,
        }
    }

    /// Room for `len` bytes at the head (wrapping to 0 if the tail end is too short).
    fn reserve(&self, len: usize) -> Option<usize> {
        let cap = self.ring.len();
        let Some(tail) = self.entries.front().map(|e| e.off) else {
            return (len <= cap).then_some(0);
        };
        if self.head >= tail {
            if self.head + len <= cap {
                return Some(self.head);
            }
            (len < tail).then_some(0)
        } else {
            (self.head + len < tail).then_some(self.head)
        }
    }

    /// Copies a frame into the ring and queues it; false when it does not fit.
    fn push(&mut self, frame: &[u8], release: Instant, dup: bool, out: usize) -> bool {
        if self.entries.len() >= self.limit {
            return false;
        }
        let Some(off) = self.reserve(frame.len()) else {
            return false;
        };
        self.ring[off..off + frame.len()].copy_from_slice(frame);
        self.head = off + frame.len();
        self.entries.push_back(Entry {
            off,
            len: frame.len(),
            release,
            dup,
            out,
        });
        true
    }

    /// Queues the held frame (if any) to leave at `release`.
    fn release_held(&mut self, release: Instant, stats: &mut PortStats) {
        if let Some(h) = self.held.take() {
            self.held_since = None;
            let buf = std::mem::take(&mut self.held_buf);
            if !self.push(&buf[..h.len], release, h.dup, h.out) {
                stats.queue_drops += 1;
            }
            self.held_buf = buf;
        }
    }
}

fn os(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setopt(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: a valid fd and a pointer to an int that lives through the call.
    os(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// An AF_PACKET socket bound to one interface, with virtio-net headers.
fn packet_socket(ifname: &str) -> io::Result<OwnedFd> {
    let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
    // SAFETY: plain socket(2).
    let raw = os(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto,
        )
    })?;
    // SAFETY: `raw` is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    setopt(&fd, libc::SOL_PACKET, PACKET_VNET_HDR, 1)?;
    // Our own transmissions on this interface must not come back to us.
    setopt(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
    setopt(&fd, libc::SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)?;
    setopt(&fd, libc::SOL_SOCKET, SO_SNDBUFFORCE, 32 << 20)?;
    let name = CString::new(ifname).map_err(|_| io::Error::other("interface name has a NUL"))?;
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(io::Error::other(format!("no interface {ifname}")));
    }
    // SAFETY: sockaddr_ll is plain data; zeroed then filled.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto as u16;
    addr.sll_ifindex = index as i32;
    // SAFETY: the pointer and length describe `addr`.
    os(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// A fast, good-enough random number in [0, 1) (xorshift64*), so the loop never locks or calls
/// into a thread-local generator per frame.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, percent: Option<f64>) -> bool {
        percent.is_some_and(|p| p > 0.0 && self.next() * 100.0 < p)
    }
}

/// The relay's nice value and its autogroup's. netem holds frames in the kernel's softirq, ahead
/// of every task; the relay is a task, and a frame due while another task has the CPU waits for
/// the scheduler. On two vCPUs with both busy, 10 ms each way, 100 pings at a time: 2 to 6 round
/// trips in 100 more than 1 ms late at nice 0, 0 or 1 at -10.
const NICE: libc::c_int = -10;

/// Raises the relay above the tests it carries: its own nice value and, as it leads a session of
/// its own (`lab up` starts it with setsid), its autogroup's, without which the nice value only
/// ranks it within its own session (sched(7), "The autogroup feature"). Needs CAP_SYS_NICE; the
/// relay runs without it, at the nice it has.
pub fn raise_priority() -> io::Result<()> {
    // SAFETY: setpriority with integer arguments; `who` 0 is this process.
    os(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) })?;
    match std::fs::write("/proc/self/autogroup", NICE.to_string()) {
        // A kernel without autogroups: the nice value alone ranks the relay.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Runs until `stop` is set.
pub fn run(config: &RelayConfig, stop: &AtomicBool) -> io::Result<()> {
    // Timers fire when asked, not up to 50 us later (prctl(2) PR_SET_TIMERSLACK).
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let n = config.ports.len();
    let fds: Vec<OwnedFd> = config
        .ports
        .iter()
        .map(|p| packet_socket(p))
        .collect::<io::Result<_>>()?;
    let mut queues: Vec<Queue> = config
        .specs
        .iter()
        .map(|s| Queue::new(config.queue_bytes, s.limit_packets.map_or(1 << 20, |l| l as usize)))
        .collect();
    let mut stats: Vec<PortStats> = config
        .ports
        .iter()
        .map(|p| PortStats {
            port: p.clone(),
            ..Default::default()
        })
        .collect();
    let mut macs: Vec<([u8; 6], usize)> = Vec::with_capacity(64);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    // Receive scratch: BATCH slots, reused for every read.
    let mut scratch = vec![0u8; BATCH * SLOT];
    // mmsghdr and iovec are plain C data (integers and raw pointers): all zeroes is a valid
    // value of each (null pointers, zero lengths), and the pointers are set below before use.
    // SAFETY: iovec is plain data; all zeroes is valid (see above).
    let mut rx_iov: Vec<libc::iovec> = vec![unsafe { std::mem::zeroed() }; BATCH];
    // SAFETY: mmsghdr is plain data; all zeroes is valid (see above).
    let mut rx_msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
    // SAFETY: iovec is plain data; all zeroes is valid (see above).
    let mut tx_iov: Vec<libc::iovec> = vec![unsafe { std::mem::zeroed() }; BATCH];
    // SAFETY: mmsghdr is plain data; all zeroes is valid (see above).
    let mut tx_msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut last_stats = Instant::now();
    let mut due: Vec<(usize, Entry)> = Vec::with_capacity(BATCH);

    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        // Release what is due, oldest first within each source queue.
        for (qi, q) in queues.iter_mut().enumerate() {
            if q.held_since
                .is_some_and(|since| now.duration_since(since) >= REORDER_WAIT)
            {
                // Nothing came to overtake it: let it go as it is.
                let release = q.held.map_or(now, |h| h.release.max(now));
                q.release_held(release, &mut stats[qi]);
            }
            loop {
                due.clear();
                for e in q.entries.iter().take(BATCH) {
                    if e.release > now {
                        break;
                    }
                    due.push((qi, *e));
                }
                if due.is_empty() {
                    break;
                }
                let k = due.len();
                send_batch(&fds, &due, &q.ring, qi, &mut tx_iov, &mut tx_msgs, &mut stats[qi], n);
                q.entries.drain(..k);
                if k < BATCH {
                    break;
                }
            }
            if q.entries.is_empty() && q.held.is_none() {
                q.head = 0;
            }
        }
        // Sleep until the next release or a frame arrives.
        let next = queues
            .iter()
            .flat_map(|q| {
                q.entries
                    .front()
                    .map(|e| e.release)
                    .into_iter()
                    .chain(q.held_since.map(|s| s + REORDER_WAIT))
            })
            .min();
        // Sleep until shortly before the next release, then spin (a zero timeout) for the last
        // stretch: waking a sleeping thread costs the VM's idle-exit latency, which would add
        // itself to every delay.
        let wait = next.map_or(Duration::from_millis(100), |t| {
            t.saturating_duration_since(Instant::now()).saturating_sub(SPIN)
        });
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `pollfds` is a valid array for the call; a null sigmask leaves the mask alone.
        let ready = unsafe {
            libc::ppoll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if ready > 0 {
            for p in 0..n {
                if pollfds[p].revents & libc::POLLIN == 0 {
                    continue;
                }
                let got = recv_batch(&fds[p], &mut scratch, &mut rx_iov, &mut rx_msgs);
                let arrived = Instant::now();
                for (i, msg) in rx_msgs.iter().take(got).enumerate() {
                    let len = msg.msg_len as usize;
                    if len < VNET_HDR_LEN + 14 {
                        continue;
                    }
                    let frame = &mut scratch[i * SLOT..i * SLOT + len];
                    frame[0] &= !VNET_F_DATA_VALID;
                    enqueue(
                        frame,
                        p,
                        arrived,
                        &config.specs[p],
                        &mut queues[p],
                        &mut stats[p],
                        &mut macs,
                        &mut rng,
                        n,
                    );
                }
            }
        }
        if last_stats.elapsed() >= Duration::from_secs(1) {
            write_stats(&config.stats_path, &stats);
            last_stats = Instant::now();
        }
    }
    write_stats(&config.stats_path, &stats);
    Ok(())
}

fn write_stats(path: &PathBuf, stats: &[PortStats]) {
    if let Ok(text) = serde_json::to_string_pretty(stats) {
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

fn recv_batch(fd: &OwnedFd, scratch: &mut [u8], iov: &mut [libc::iovec], msgs: &mut [libc::mmsghdr]) -> usize {
    for i in 0..BATCH {
        iov[i] = libc::iovec {
            iov_base: scratch[i * SLOT..].as_mut_ptr().cast(),
            iov_len: SLOT,
        };
        // SAFETY: zeroed msghdr is valid; we point it at our iovec.
        msgs[i].msg_hdr = unsafe { std::mem::zeroed() };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_len = 0;
    }
    // SAFETY: every msghdr points at a distinct SLOT-sized region of `scratch`, which outlives
    // the call.
    let got = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            BATCH as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    got.max(0) as usize
}

#[allow(clippy::too_many_arguments)]
fn enqueue(
    frame: &[u8],
    in_port: usize,
    arrived: Instant,
    spec: &LinkSpec,
    q: &mut Queue,
    stats: &mut PortStats,
    macs: &mut Vec<([u8; 6], usize)>,
    rng: &mut Rng,
    ports: usize,
) {
    stats.frames_in += 1;
    stats.bytes_in += (frame.len() - VNET_HDR_LEN) as u64;
    let eth = &frame[VNET_HDR_LEN..];
    let dst: [u8; 6] = eth[0..6].try_into().expect("six bytes");
    let src: [u8; 6] = eth[6..12].try_into().expect("six bytes");
    if src[0] & 1 == 0 && !macs.iter().any(|(m, p)| *m == src && *p == in_port) {
        macs.retain(|(m, _)| *m != src);
        if macs.len() < 1024 {
            macs.push((src, in_port));
        }
    }
    let out = if ports == 2 {
        1 - in_port
    } else if dst[0] & 1 == 1 {
        usize::MAX
    } else {
        macs.iter().find(|(m, _)| *m == dst).map_or(usize::MAX, |(_, p)| *p)
    };
    if out == in_port {
        return;
    }
    let mut release = arrived + spec.delay();
    if let Some(j) = spec.jitter_us.filter(|j| *j > 0) {
        let offset = (rng.next() * 2.0 - 1.0) * j as f64;
        release = if offset >= 0.0 {
            release + Duration::from_micros(offset as u64)
        } else {
            release
                .checked_sub(Duration::from_micros((-offset) as u64))
                .unwrap_or(arrived)
                .max(arrived)
        };
    }
    // Jitter alone never reorders: a frame leaves no earlier than the one before it.
    if let Some(last) = q.last_release {
        release = release.max(last);
    }
    q.last_release = Some(release);
    let dup = rng.chance(spec.duplicate_percent);
    if q.held.is_none() && rng.chance(spec.reorder_percent) {
        if q.entries.len() >= q.limit {
            stats.queue_drops += 1;
            return;
        }
        stats.reordered += 1;
        stats.duplicated += u64::from(dup);
        q.held_buf[..frame.len()].copy_from_slice(frame);
        q.held = Some(Entry {
            off: 0,
            len: frame.len(),
            release,
            dup,
            out,
        });
        q.held_since = Some(arrived);
        return;
    }
    if !q.push(frame, release, dup, out) {
        stats.queue_drops += 1;
        return;
    }
    stats.duplicated += u64::from(dup);
    if spec.delay_us.is_some_and(|d| d > 0) {
        stats.delayed += 1;
    }
    // The held frame leaves right behind the one that overtook it.
    q.release_held(release, stats);
}

#[allow(clippy::too_many_arguments)]
fn send_batch(
    fds: &[OwnedFd],
    due: &[(usize, Entry)],
    ring: &[u8],
    in_port: usize,
    iov: &mut [libc::iovec],
    msgs: &mut [libc::mmsghdr],
    stats: &mut PortStats,
    ports: usize,
) {
    for (out, fd) in fds.iter().enumerate().take(ports) {
        if out == in_port {
            continue;
        }
        let mut k = 0;
        for (_, e) in due {
            if e.out != out && e.out != usize::MAX {
                continue;
            }
            for _ in 0..(1 + usize::from(e.dup)) {
                if k == BATCH {
                    flush(fd, iov, msgs, k, stats);
                    k = 0;
                }
                iov[k] = libc::iovec {
                    iov_base: ring[e.off..].as_ptr() as *mut libc::c_void,
                    iov_len: e.len,
                };
                k += 1;
            }
        }
        if k > 0 {
            flush(fd, iov, msgs, k, stats);
        }
    }
}

fn flush(fd: &OwnedFd, iov: &mut [libc::iovec], msgs: &mut [libc::mmsghdr], k: usize, stats: &mut PortStats) {
    for i in 0..k {
        // SAFETY: zeroed msghdr is valid; we point it at our iovec.
        msgs[i].msg_hdr = unsafe { std::mem::zeroed() };
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    let mut sent = 0;
    let mut tries = 0;
    while sent < k && tries < 1000 {
        // SAFETY: msgs[sent..k] point at frames in the ring, which is not written during the call.
        let r = unsafe { libc::sendmmsg(fd.as_raw_fd(), msgs[sent..].as_mut_ptr(), (k - sent) as libc::c_uint, 0) };
        if r > 0 {
            sent += r as usize;
        } else {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted {
                tries += 1;
                std::thread::yield_now();
                continue;
            }
            // This frame cannot be sent (too large for the port, say): count it and go on.
            stats.send_errors += 1;
            sent += 1;
        }
    }
    stats.send_errors += (k - sent) as u64;
    stats.frames_out += sent as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_reserves_with_wrap_around() {
        let mut q = Queue::new(100, 10);
        assert_eq!(q.reserve(60), Some(0));
        assert!(q.push(&[7u8; 60], Instant::now(), false, 1));
        assert_eq!(q.head, 60);
        assert_eq!(q.reserve(50), None, "40 bytes left at the end, none at the start");
        assert_eq!(q.reserve(40), Some(60));
        q.entries.pop_front();
        q.entries.push_back(Entry {
            off: 60,
            len: 30,
            release: Instant::now(),
            dup: false,
            out: 1,
        });
        q.head = 90;
        assert_eq!(q.reserve(20), Some(0), "wraps to the start, before the tail at 60");
        assert_eq!(q.reserve(60), None);
    }

    #[test]
    fn rng_chances_match_their_percentages() {
        let mut r = Rng(42);
        let hits = (0..100_000).filter(|_| r.chance(Some(1.0))).count();
        assert!((900..1100).contains(&hits), "{hits}");
        assert!(!r.chance(None));
    }
}
