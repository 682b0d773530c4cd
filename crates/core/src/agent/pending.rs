//! The data connections running tests expect ([`Pending`], by cookie): how many each test takes
//! and how fast ([`Expecting`]), handing an arriving one to its test ([`deliver`]), telling one
//! from a control connection before it is let past the caps ([`is_known_data`]), and the
//! [`Registration`] that removes a test's cookie when the test ends.

use super::admit::{Source, near_fd_limit};
use crate::proto::frame::{self, COOKIE_LEN, DATA_HEADER_LEN};
use std::collections::HashMap;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::Instant;

/// Tests waiting for their data connections, by cookie.
pub(super) type Pending = Mutex<HashMap<[u8; COOKIE_LEN], Expecting>>;

/// A test waiting for data connections with its cookie, and how many it takes (a
/// test's own cookie must not let its client queue connections without limit).
pub(super) struct Expecting {
    tx: SyncSender<(u16, TcpStream)>,
    /// Stream indexes below this are valid.
    streams: u16,
    /// One connection per stream: how many may still come. None: a new connection per
    /// transaction (TCP_CRR), bounded by the queue and by `rate`.
    left: Option<usize>,
    rate: Option<ConnectionRate>,
    /// Where the test's control connection came from: its data connections, expected from
    /// there, do not count against that source's cap of opening connections.
    source: Source,
}

/// New connections a CRR test may open: twice its declared transaction rate over any second
/// (a token bucket), plus one per stream.
struct ConnectionRate {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl ConnectionRate {
    fn admit(&mut self, now: Instant) -> bool {
        let gained = now.saturating_duration_since(self.at).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + gained).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Expecting {
    /// Data connections this test may still see opening at once: those it still expects, or for
    /// CRR two per stream.
    fn still_expected(&self) -> usize {
        self.left.unwrap_or(2 * usize::from(self.streams))
    }

    /// One data connection per stream, `streams` of them, queued in a channel of that size.
    pub(super) fn per_stream(streams: usize, source: Source) -> (Expecting, Receiver<(u16, TcpStream)>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(streams.max(1));
        let e = Expecting {
            tx,
            streams: u16::try_from(streams).unwrap_or(u16::MAX),
            left: Some(streams),
            rate: None,
            source,
        };
        (e, rx)
    }

    /// TCP_CRR: a new connection per transaction on `streams` streams; at most two per stream
    /// wait to be answered, and with a declared `rate` (transactions per second per stream) no
    /// more than twice that arrive over any second.
    pub(super) fn per_transaction(
        streams: usize,
        rate: Option<f64>,
        source: Source,
    ) -> (Expecting, Receiver<(u16, TcpStream)>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(2 * streams.max(1));
        let rate = rate.map(|r| {
            let per_second = 2.0 * r * streams as f64;
            let burst = per_second + streams as f64;
            ConnectionRate {
                per_second,
                burst,
                tokens: burst,
                at: Instant::now(),
            }
        });
        let e = Expecting {
            tx,
            streams: u16::try_from(streams).unwrap_or(u16::MAX),
            left: None,
            rate,
            source,
        };
        (e, rx)
    }
}

/// Data connections the running tests still expect: from `source`, and from anywhere.
pub(super) fn expected_from(pending: &Pending, source: Source) -> (usize, usize) {
    let pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    pending.values().fold((0, 0), |(mine, all), e| {
        let n = e.still_expected();
        (mine + if e.source == source { n } else { 0 }, all + n)
    })
}

/// Hands a data connection to the test that waits for `cookie`, or drops it at once: no such
/// test, a stream it does not have, more connections than it declared, faster than it declared,
/// its queue full, or too few descriptors left for the control port.
pub(super) fn deliver(pending: &Pending, fd_limit: u64, cookie: [u8; COOKIE_LEN], index: u16, stream: TcpStream) {
    if near_fd_limit(&stream, fd_limit) {
        return;
    }
    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    let Some(e) = pending.get_mut(&cookie) else { return };
    if index >= e.streams || e.left == Some(0) {
        return;
    }
    if let Some(rate) = &mut e.rate
        && !rate.admit(Instant::now())
    {
        return;
    }
    match e.tx.try_send((index, stream)) {
        Ok(()) => {
            if let Some(n) = &mut e.left {
                *n -= 1;
            }
        }
        Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {}
    }
}

/// Removes a test's cookie from the pending table when the test ends, however it ends.
pub(super) struct Registration<'a> {
    pending: &'a Pending,
    cookie: [u8; COOKIE_LEN],
}

/// Data connections that arrive with `cookie` go to the test's queue, as far as `expecting`
/// allows, until the registration drops.
pub(super) fn register(pending: &Pending, cookie: [u8; COOKIE_LEN], expecting: Expecting) -> Registration<'_> {
    pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(cookie, expecting);
    Registration { pending, cookie }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&self.cookie);
        }
    }
}

/// Whether the first bytes already in `stream` are a data header for a test this agent runs
/// (read without taking them off the socket and without waiting).
pub(super) fn is_known_data(pending: &Pending, stream: &TcpStream) -> bool {
    let mut header = [0u8; DATA_HEADER_LEN];
    // SAFETY: recv into a buffer of its stated length on a descriptor this stream owns.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            header.as_mut_ptr().cast(),
            header.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n != DATA_HEADER_LEN as isize {
        return false;
    }
    frame::parse_data_header(&header).is_some_and(|(cookie, _)| pending.lock().is_ok_and(|p| p.contains_key(&cookie)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn issue_14_crr_connections_are_held_to_twice_the_declared_rate() {
        let source = Source::of(&"127.0.0.1:1".parse().expect("address"));
        let (mut e, _rx) = Expecting::per_transaction(2, Some(10.0), source);
        assert_eq!(e.still_expected(), 4, "two per stream may be opening");
        let rate = e.rate.as_mut().expect("a declared rate");
        let t0 = rate.at;
        // A burst of one second's worth (2 x 10/s x 2 streams) plus one per stream...
        let burst = (0..100).filter(|_| rate.admit(t0)).count();
        assert_eq!(burst, 42);
        // ...then 40 a second.
        let next = (1..=100)
            .filter(|i| rate.admit(t0 + Duration::from_millis(10 * i)))
            .count();
        assert_eq!(next, 40);
        let (plain, _rx) = Expecting::per_stream(3, source);
        assert_eq!(plain.still_expected(), 3);
        assert!(plain.rate.is_none());
    }
}
