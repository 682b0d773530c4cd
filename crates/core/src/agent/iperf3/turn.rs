//! Whose turn the iperf3 port is: iperf3 runs one test at a time, so the port holds at most one
//! [`Turn`], named by its cookie. A connection whose cookie is the running test's is one of its
//! data connections (handed to the test while it expects them); any other cookie while a test
//! runs is a second client, told the server is busy.

use crate::proto::iperf3::COOKIE_LEN;
use std::net::{IpAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Mutex, MutexGuard};

/// The running test, if any.
#[derive(Default)]
pub(super) struct Port {
    running: Mutex<Option<Running>>,
}

struct Running {
    cookie: [u8; COOKIE_LEN],
    /// Its client's address: its data connections count against no opening cap there.
    source: IpAddr,
    /// Where its data connections go while it expects them, and how many more it takes.
    streams: Option<(SyncSender<Accepted>, usize)>,
}

/// A data connection and its place in the accept order: each connection's cookie is read on a
/// thread of its own, so they may come to the test out of order, and iperf3 numbers its streams
/// (and, under `--bidir`, tells their directions) by the order it made them in.
pub(super) type Accepted = (u64, TcpStream);

/// What a connection with a valid cookie is.
pub(super) enum Arrival<'a> {
    /// The first: it runs its test, the port's until the turn drops.
    Control(Turn<'a>),
    /// A data connection of the running test, handed over.
    Data,
    /// A second client while a test runs.
    Busy,
    /// The running test's cookie when it expects no (more) data connection.
    Unexpected,
}

impl Port {
    fn lock(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Places a connection that sent `cookie` from `source`.
    pub(super) fn arrive(&self, cookie: [u8; COOKIE_LEN], source: IpAddr, stream: Accepted) -> Arrival<'_> {
        let mut running = self.lock();
        match &mut *running {
            None => {
                *running = Some(Running {
                    cookie,
                    source,
                    streams: None,
                });
                Arrival::Control(Turn { port: self })
            }
            Some(r) if r.cookie == cookie => match &mut r.streams {
                Some((tx, left)) if *left > 0 && tx.try_send(stream).is_ok() => {
                    *left -= 1;
                    Arrival::Data
                }
                _ => Arrival::Unexpected,
            },
            Some(_) => Arrival::Busy,
        }
    }

    /// Data connections the running test still expects from `source`.
    pub(super) fn expected_from(&self, source: IpAddr) -> usize {
        match &*self.lock() {
            Some(Running {
                source: s,
                streams: Some((_, left)),
                ..
            }) if *s == source => *left,
            _ => 0,
        }
    }
}

/// The port's one test; the port is free again when it drops.
pub(super) struct Turn<'a> {
    port: &'a Port,
}

impl Turn<'_> {
    /// From now on `wanted` data connections with the test's cookie come to the receiver.
    pub(super) fn expect(&self, wanted: usize) -> Receiver<Accepted> {
        let (tx, rx) = mpsc::sync_channel(wanted.max(1));
        if let Some(r) = &mut *self.port.lock() {
            r.streams = Some((tx, wanted));
        }
        rx
    }

    /// No more data connections: late ones are closed.
    pub(super) fn expect_none(&self) {
        if let Some(r) = &mut *self.port.lock() {
            r.streams = None;
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.port.lock() = None;
    }
}
