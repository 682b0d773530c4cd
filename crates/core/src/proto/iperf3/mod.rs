//! iperf3's control protocol (esnet/iperf `iperf_api.c`, `iperf.h`; the same from 3.7 to 3.18),
//! spoken by linerate's client against an `iperf3 -s` and by `serve --iperf3-port` to an
//! `iperf3 -c`. docs/iperf3.md says what maps to what.
//!
//! A control TCP connection opens with the test's cookie: 36 characters of `a-z2-7`, then NUL.
//! The server then drives the test with one-byte states ([`State`]); the parameters
//! ([`Params`]) and, at the end, each side's results ([`Results`]) travel as JSON behind a
//! four-byte big-endian length. TCP data connections open with the same cookie; a UDP stream
//! opens with a four-byte hello from the client ("9876" on the wire), which the server answers
//! ("6789"; servers before 3.17 may answer 987654321 in host order: any four bytes do).
//!
//! Stream ids: iperf3 numbers its streams 1, 3, 4, 5, ... in the order they were made (a quirk
//! of `iperf_add_stream`), the client's sending streams first under `--bidir`: [`stream_id`].
//! Numbers in the JSON are doubles (cJSON): -1 ("none", as retransmits on a receiver) arrives
//! as 18446744073709551615. Every read here has a deadline and a size bound.

mod params;

use crate::proto::peer_text;
pub use params::{END_SLACK_SECONDS, UNTIMED_SECONDS, params_of, spec_of};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// iperf3's default port.
pub const DEFAULT_PORT: u16 = 5201;
/// Bytes of a cookie on the wire: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// What a UDP stream's client sends first (UDP_CONNECT_MSG, 0x36373839 in host order).
pub const UDP_HELLO: [u8; 4] = *b"9876";
/// What the server answers (UDP_CONNECT_REPLY, 0x39383736 in host order).
pub const UDP_REPLY: [u8; 4] = *b"6789";
/// The largest parameter JSON read (iperf3's own is a few hundred bytes; `extra_data` and a
/// title are short strings).
pub const MAX_PARAMS_BYTES: usize = 64 << 10;
/// The smallest results bound: a test's results grow with its streams, and with the server's
/// own output when the client asks for it (`get_server_output`).
pub const MIN_RESULTS_BYTES: usize = 1 << 20;
/// How long a peer may take to send a state, a cookie or a JSON message once it is due.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// The most streams iperf3 itself takes (`-P` up to 128).
pub const MAX_PARALLEL: u64 = 128;

/// The one-byte states the server (and, at the end, the client) sends on the control
/// connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i8)]
pub enum State {
    TestStart = 1,
    TestRunning = 2,
    TestEnd = 4,
    ParamExchange = 9,
    CreateStreams = 10,
    ServerTerminate = 11,
    ClientTerminate = 12,
    ExchangeResults = 13,
    DisplayResults = 14,
    IperfDone = 16,
    AccessDenied = -1,
    ServerError = -2,
}

impl State {
    /// The state a byte names; None for any other byte.
    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }

    pub fn byte(self) -> u8 {
        self as i8 as u8
    }
}

/// iperf3's error numbers sent after SERVER_ERROR (esnet/iperf `src/iperf_api.h`), chosen so
/// that `iperf3 -c` prints a sensible line.
pub const IENEWTEST: i32 = 100; // "unable to create a new test" + errno
pub const IERECVPARAMS: i32 = 114; // "unable to receive parameters from client" + errno
pub const IERECVRESULTS: i32 = 117; // "unable to receive results from client/server" + errno
pub const IEAUTHTEST: i32 = 142; // "test authorization failed"
pub const IESTREAMACCEPT: i32 = 204; // "unable to accept stream connection" + errno

/// i_errno's name for the errors a server sends most (esnet/iperf `src/iperf_api.h`): what
/// linerate's client says of a SERVER_ERROR.
pub fn i_errno_name(i_errno: i32) -> &'static str {
    match i_errno {
        6 => "too many parallel streams",
        7 => "block size too large",
        8 => "socket buffer size too large",
        10 => "MSS too large",
        20 => "UDP block size invalid",
        25 => "cannot be both reverse and bidirectional",
        IENEWTEST => "unable to create a new test",
        101 => "test initialization failed",
        102 => "unable to listen for connections",
        112 => "unable to receive a control message",
        IERECVPARAMS => "unable to receive the parameters",
        IERECVRESULTS => "unable to receive the results",
        119 => "the client has terminated",
        120 => "the server has terminated",
        121 => "the server is busy",
        122 => "unable to set TCP_NODELAY",
        123 => "unable to set the MSS",
        124 | 130 | 141 => "unable to set the socket buffer size",
        132 => "unable to set CPU affinity",
        134 => "unable to set TCP_CONGESTION",
        IEAUTHTEST => "test authorization failed",
        IESTREAMACCEPT => "unable to accept a stream connection",
        200..=207 => "a data stream failed",
        208 => "a stream has an invalid id",
        _ => "an error",
    }
}

/// A fresh cookie: 36 characters of iperf3's alphabet (`a-z2-7`), then NUL.
pub fn new_cookie() -> [u8; COOKIE_LEN] {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let (a, b) = (crate::proto::auth::nonce(), crate::proto::auth::nonce());
    let mut cookie = [0u8; COOKIE_LEN];
    for (c, byte) in cookie.iter_mut().take(COOKIE_LEN - 1).zip(a.iter().chain(b.iter())) {
        *c = ALPHABET[usize::from(*byte) % ALPHABET.len()];
    }
    cookie
}

/// Whether 37 bytes are a cookie as iperf3 makes them (an attacker's bytes are not echoed).
pub fn is_cookie(bytes: &[u8]) -> bool {
    bytes.len() == COOKIE_LEN
        && bytes[COOKIE_LEN - 1] == 0
        && bytes[..COOKIE_LEN - 1]
            .iter()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(b))
}

/// iperf3's number for the `index`-th stream made (0-based): 1, 3, 4, 5, ...
pub fn stream_id(index: usize) -> u64 {
    if index == 0 { 1 } else { index as u64 + 2 }
}

/// The stream index an iperf3 id names; None for 2 or 0 (never made).
pub fn stream_index(id: u64) -> Option<usize> {
    match id {
        1 => Some(0),
        0 | 2 => None,
        n => Some((n - 2) as usize),
    }
}

/// A cJSON number that may stand for "none" (-1, or -1 seen through an unsigned cast).
fn count(v: Option<f64>) -> Option<u64> {
    v.filter(|x| x.is_finite() && *x >= 0.0 && *x < 9.2e18)
        .map(|x| x as u64)
}

/// The test's parameters as the client sends them (`send_parameters`). Every field is optional
/// on the wire; a field of the wrong type refuses the whole message. Keys this build does not
/// know are ignored, as iperf3 ignores them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Params {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sctp: Option<bool>,
    /// Seconds at the start not counted (`-O`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit: Option<f64>,
    /// Seconds the test runs (`-t`); 0 with `num` or `blockcount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    /// Bytes to send in all (`-n`); 0: not a byte count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num: Option<f64>,
    /// Blocks to send in all (`-k`); 0: not a block count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blockcount: Option<f64>,
    #[serde(rename = "MSS", default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    /// Streams each way (`-P`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bidirectional: Option<bool>,
    /// Socket buffer, bytes (`-w`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<f64>,
    /// Bytes per write (`-l`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<f64>,
    /// Target rate per stream, bit/s (`-b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fqrate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_timer: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<f64>,
    #[serde(rename = "TOS", default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flowlabel: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// Congestion control asked for (`-C`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_server_output: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_counters_64bit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeating_payload: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zerocopy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dont_fragment: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_affinity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// RSA authentication (`--username`): refused, out of scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authtoken: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mptcp: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_rx_copy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro: Option<f64>,
}

/// How a test's parameters end it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// After this many seconds (the client says when: it sends TEST_END).
    Seconds(f64),
    /// After this many bytes in all, every stream together.
    Bytes(u64),
    /// After this many blocks (writes of `len`) in all.
    Blocks(u64),
}

/// The parameters checked: what a server acts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    pub udp: bool,
    /// Streams each way.
    pub parallel: usize,
    pub reverse: bool,
    pub bidirectional: bool,
    pub end: End,
    /// Whole seconds not counted at the start.
    pub omit_seconds: f64,
    pub len: Option<u64>,
    pub window: Option<u64>,
    pub mss: Option<u32>,
    pub nodelay: bool,
    pub congestion: Option<String>,
    /// UDP target rate per stream, bit/s (iperf3's default for UDP: 1 Mbit/s).
    pub bandwidth: Option<u64>,
    pub udp_counters_64bit: bool,
    pub get_server_output: bool,
    /// The client's version as it said it (cut and escaped).
    pub client_version: Option<String>,
}

/// Why a peer's message was refused.
#[derive(Debug, thiserror::Error)]
pub enum Iperf3Error {
    #[error("{peer}: {what}")]
    Bad { peer: SocketAddr, what: String },
    #[error("{peer} sent nothing for {seconds} s while {what}")]
    Timeout {
        peer: SocketAddr,
        what: &'static str,
        seconds: f64,
    },
    #[error("{peer} closed the control connection while {what}")]
    Closed { peer: SocketAddr, what: &'static str },
    /// A busy server answers a second control connection with ACCESS_DENIED.
    #[error("iperf3 server {peer} is busy (it runs another test)")]
    Busy { peer: SocketAddr },
    /// SERVER_ERROR: the server's `i_errno` (esnet/iperf `src/iperf_api.h`) and `errno`.
    #[error("iperf3 server {peer} failed {what}: {name} (i_errno {i_errno}, errno {errno})")]
    ServerError {
        peer: SocketAddr,
        what: &'static str,
        name: &'static str,
        i_errno: i32,
        errno: i32,
    },
    #[error("{peer}: {what}")]
    Io {
        peer: SocketAddr,
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

impl Params {
    /// Reads a parameter message; a wrong type or malformed JSON is refused, naming the problem.
    pub fn parse(bytes: &[u8], peer: SocketAddr) -> Result<Params, Iperf3Error> {
        serde_json::from_slice(bytes).map_err(|e| Iperf3Error::Bad {
            peer,
            what: format!("malformed parameters: {}", peer_text(&e.to_string())),
        })
    }

    /// What a server acts on, or the one-line reason it refuses the test.
    pub fn check(&self) -> Result<Checked, String> {
        if self.authtoken.is_some() {
            return Err("RSA authentication (--username) is not supported by linerate's iperf3 server".into());
        }
        if self.sctp == Some(true) {
            return Err("SCTP is not supported".into());
        }
        if self.mptcp.is_some_and(|m| m != 0.0) {
            return Err("MPTCP is not supported".into());
        }
        let udp = match (self.tcp, self.udp) {
            (Some(true), Some(true)) => return Err("both tcp and udp".into()),
            (_, Some(true)) => true,
            (Some(true), _) => false,
            _ => return Err("neither tcp nor udp".into()),
        };
        let whole = |v: Option<f64>, name: &str, max: f64| -> Result<Option<u64>, String> {
            match v {
                None => Ok(None),
                Some(x) if x.is_finite() && x >= 0.0 && x <= max && x.fract() == 0.0 => Ok(Some(x as u64)),
                Some(x) => Err(format!("{name} {x} is out of range")),
            }
        };
        let parallel = whole(self.parallel, "parallel", MAX_PARALLEL as f64)?
            .unwrap_or(1)
            .max(1) as usize;
        let time = match self.time {
            None => 0.0,
            Some(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => t,
            Some(t) => return Err(format!("time {t} is out of range")),
        };
        let num = whole(self.num, "num", 1e18)?.unwrap_or(0);
        let blocks = whole(self.blockcount, "blockcount", 1e15)?.unwrap_or(0);
        let end = if num > 0 {
            End::Bytes(num)
        } else if blocks > 0 {
            End::Blocks(blocks)
        } else if time > 0.0 {
            End::Seconds(time)
        } else {
            return Err("no time, byte count or block count".into());
        };
        let omit_seconds = match self.omit {
            None => 0.0,
            Some(o) if o.is_finite() && (0.0..=600.0).contains(&o) => o,
            Some(o) => return Err(format!("omit {o} is out of range")),
        };
        let len = whole(self.len, "len", f64::from(1u32 << 30))?.filter(|l| *l > 0);
        let window = whole(self.window, "window", f64::from(1u32 << 30))?.filter(|w| *w > 0);
        let mss = whole(self.mss, "MSS", 65_535.0)?.filter(|m| *m > 0).map(|m| m as u32);
        let bandwidth = whole(self.bandwidth, "bandwidth", 1e13)?.filter(|b| *b > 0);
        let congestion = match &self.congestion {
            None => None,
            Some(c) if !c.is_empty() && c.len() <= 16 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                Some(c.clone())
            }
            Some(c) => return Err(format!("congestion control '{}' is not a name", peer_text(c))),
        };
        let flag = |v: Option<f64>| v.is_some_and(|x| x != 0.0);
        Ok(Checked {
            udp,
            parallel,
            reverse: self.reverse == Some(true),
            bidirectional: self.bidirectional == Some(true),
            end,
            omit_seconds,
            len,
            window,
            mss,
            nodelay: self.nodelay == Some(true),
            congestion,
            bandwidth,
            udp_counters_64bit: flag(self.udp_counters_64bit),
            get_server_output: flag(self.get_server_output),
            client_version: self
                .client_version
                .as_deref()
                .map(|v| peer_text(&crate::proto::peer_text_cut(v, 40))),
        })
    }
}

/// One stream's figures in a results message (`send_results`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamResults {
    pub id: f64,
    /// Bytes sent (by a sender, warm-up left out) or received (by a receiver, after the omit).
    pub bytes: f64,
    /// TCP retransmits on a sending stream; -1 (or its unsigned form) otherwise.
    pub retransmits: f64,
    /// UDP receivers: RFC 1889 jitter, seconds.
    pub jitter: f64,
    /// UDP receivers: datagrams lost (by sequence gaps, less those that came late).
    pub errors: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_errors: Option<f64>,
    /// UDP: datagrams sent (sender) or the highest sequence number seen (receiver).
    pub packets: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_packets: Option<f64>,
    #[serde(default)]
    pub start_time: f64,
    #[serde(default)]
    pub end_time: f64,
}

impl StreamResults {
    /// Its id as a stream index; None for an id iperf3 never gives.
    pub fn index(&self) -> Option<usize> {
        count(Some(self.id)).and_then(stream_index)
    }
    pub fn bytes(&self) -> u64 {
        count(Some(self.bytes)).unwrap_or(0)
    }
    pub fn retransmits(&self) -> Option<u64> {
        count(Some(self.retransmits))
    }
    pub fn errors(&self) -> u64 {
        count(Some(self.errors)).unwrap_or(0)
    }
    pub fn packets(&self) -> u64 {
        count(Some(self.packets)).unwrap_or(0)
    }
    /// Datagrams not counted at the start (3.14 and later; 0 before).
    pub fn omitted_packets(&self) -> u64 {
        count(self.omitted_packets).unwrap_or(0)
    }
    pub fn omitted_errors(&self) -> u64 {
        count(self.omitted_errors).unwrap_or(0)
    }
    /// The stream's time, seconds.
    pub fn seconds(&self) -> f64 {
        let s = self.end_time - self.start_time;
        if s.is_finite() && s > 0.0 { s } else { 0.0 }
    }
}

/// One side's results (`send_results` / `get_results`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The process's CPU time over the test's wall time, percent (100 = one CPU busy).
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1 when this side sent and read retransmits; 0 when it sent without; -1 when it only
    /// received.
    pub sender_has_retransmits: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResults>,
    /// The server's own output, when the client asked for it and the server ran with `-J`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<serde_json::Value>,
    /// The server's own output as text, when the client asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
}

impl Results {
    /// Reads a results message; malformed JSON, a wrong type or a stream id given twice or
    /// never made is refused.
    pub fn parse(bytes: &[u8], peer: SocketAddr, streams: usize) -> Result<Results, Iperf3Error> {
        let bad = |what: String| Iperf3Error::Bad { peer, what };
        let r: Results = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("malformed results: {}", peer_text(&e.to_string()))))?;
        let mut seen = vec![false; streams];
        for s in &r.streams {
            match s.index().filter(|i| *i < streams) {
                Some(i) if !seen[i] => seen[i] = true,
                _ => return Err(bad(format!("results name stream {} twice or one never made", s.id))),
            }
        }
        Ok(r)
    }

    /// The peer's version as its own output says it (`start.version`), when it sent that.
    pub fn server_version(&self) -> Option<String> {
        let v = self
            .server_output_json
            .as_ref()?
            .get("start")?
            .get("version")?
            .as_str()?;
        Some(peer_text(&crate::proto::peer_text_cut(v, 40)))
    }

    /// The peer's congestion control, cut and escaped.
    pub fn congestion(&self) -> Option<String> {
        self.congestion_used
            .as_deref()
            .map(|c| peer_text(&crate::proto::peer_text_cut(c, 16)))
    }
}

/// The control connection: states and JSON messages, each read within a deadline.
pub struct Control {
    stream: TcpStream,
    peer: SocketAddr,
}

impl Control {
    pub fn new(stream: TcpStream, peer: SocketAddr) -> Control {
        // States are single bytes, often two in a row (TEST_START, TEST_RUNNING): with Nagle
        // the second waits for the peer's delayed ACK, 40 ms taken from the test's time.
        let _ = stream.set_nodelay(true);
        Control { stream, peer }
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    fn io(&self, what: &'static str) -> impl Fn(io::Error) -> Iperf3Error + '_ {
        move |source| Iperf3Error::Io {
            peer: self.peer,
            what,
            source,
        }
    }

    /// Reads exactly `buf.len()` bytes before `timeout` runs out, however they trickle.
    pub fn read_exact_within(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        what: &'static str,
    ) -> Result<(), Iperf3Error> {
        let until = Instant::now() + timeout;
        let mut have = 0;
        while have < buf.len() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Iperf3Error::Timeout {
                    peer: self.peer,
                    what,
                    seconds: timeout.as_secs_f64(),
                });
            }
            self.stream.set_read_timeout(Some(left)).map_err(self.io(what))?;
            match self.stream.read(&mut buf[have..]) {
                Ok(0) => return Err(Iperf3Error::Closed { peer: self.peer, what }),
                Ok(n) => have += n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(what)(e)),
            }
        }
        Ok(())
    }

    /// Waits for one state byte, at most `timeout`; a byte that names no state is refused.
    pub fn recv_state(&mut self, timeout: Duration, what: &'static str) -> Result<State, Iperf3Error> {
        let mut b = [0u8; 1];
        self.read_exact_within(&mut b, timeout, what)?;
        State::from_byte(b[0]).ok_or_else(|| Iperf3Error::Bad {
            peer: self.peer,
            what: format!("sent state {} while {what}", b[0] as i8),
        })
    }

    /// Whether a state byte (or the end of the connection) is waiting, without blocking
    /// longer than `wait`: Ok(None) when nothing came.
    pub fn poll_state(&mut self, wait: Duration, what: &'static str) -> Result<Option<State>, Iperf3Error> {
        let mut b = [0u8; 1];
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .map_err(self.io(what))?;
        match self.stream.read(&mut b) {
            Ok(0) => Err(Iperf3Error::Closed { peer: self.peer, what }),
            Ok(_) => State::from_byte(b[0]).map(Some).ok_or_else(|| Iperf3Error::Bad {
                peer: self.peer,
                what: format!("sent state {} while {what}", b[0] as i8),
            }),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.io(what)(e)),
        }
    }

    pub fn send_state(&mut self, state: State) -> Result<(), Iperf3Error> {
        self.send_bytes(&[state.byte()], "sending a state")
    }

    /// Writes raw bytes (the cookie), within [`STEP_TIMEOUT`].
    pub fn send_bytes(&mut self, bytes: &[u8], what: &'static str) -> Result<(), Iperf3Error> {
        self.stream
            .set_write_timeout(Some(STEP_TIMEOUT))
            .map_err(self.io(what))?;
        self.stream.write_all(bytes).map_err(self.io(what))
    }

    /// Sends a JSON message: its length (four bytes, big-endian), then the text.
    pub fn send_json<T: Serialize>(&mut self, message: &T) -> Result<(), Iperf3Error> {
        let text = serde_json::to_vec(message).map_err(|e| Iperf3Error::Bad {
            peer: self.peer,
            what: format!("encoding a message: {e}"),
        })?;
        let mut frame = Vec::with_capacity(4 + text.len());
        frame.extend_from_slice(&(text.len() as u32).to_be_bytes());
        frame.extend_from_slice(&text);
        self.send_bytes(&frame, "sending JSON")
    }

    /// Reads one JSON message's bytes: a length above `max` is refused before its body is read.
    pub fn recv_json(&mut self, max: usize, timeout: Duration, what: &'static str) -> Result<Vec<u8>, Iperf3Error> {
        let mut len = [0u8; 4];
        self.read_exact_within(&mut len, timeout, what)?;
        let len = u32::from_be_bytes(len) as usize;
        if len > max {
            return Err(Iperf3Error::Bad {
                peer: self.peer,
                what: format!("announced {len} bytes of JSON while {what}, more than the {max} taken"),
            });
        }
        let mut body = vec![0u8; len];
        // Large results get a second more per MiB, as linerate's own protocol gives them.
        let allowance = timeout + Duration::from_secs((len >> 20) as u64);
        self.read_exact_within(&mut body, allowance, what)?;
        Ok(body)
    }
}

/// The results bound for a test of `streams` streams lasting `seconds`: room for the server's
/// own interval output when it was asked for (a few hundred bytes per stream per second).
pub fn results_limit(streams: usize, seconds: f64) -> usize {
    let per = 512.0 * (streams as f64 + 1.0) * (seconds.max(1.0) + 2.0);
    (per as usize).clamp(MIN_RESULTS_BYTES, 64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        "127.0.0.1:5201".parse().expect("addr")
    }

    #[test]
    fn issue_26_a_cookie_is_iperf3s_alphabet_and_nul() {
        let c = new_cookie();
        assert!(is_cookie(&c), "{c:?}");
        assert_ne!(new_cookie(), c);
        let mut bad = c;
        bad[3] = b'A';
        assert!(!is_cookie(&bad));
        assert!(!is_cookie(&c[..36]));
    }

    #[test]
    fn issue_26_stream_ids_skip_two() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), vec![1, 3, 4, 5]);
        assert_eq!(
            (0..4).map(|i| stream_index(stream_id(i))).collect::<Vec<_>>(),
            vec![Some(0), Some(1), Some(2), Some(3)]
        );
        assert_eq!(stream_index(2), None);
        assert_eq!(stream_index(0), None);
    }

    #[test]
    fn issue_26_parameters_from_iperf3_3_12_are_read_and_checked() {
        let text = br#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":2,"bidirectional":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let p = Params::parse(text, peer()).expect("parses");
        let c = p.check().expect("checks");
        assert!(!c.udp && c.bidirectional && !c.reverse);
        assert_eq!((c.parallel, c.len, c.end), (2, Some(131_072), End::Seconds(1.0)));
        assert_eq!(c.client_version.as_deref(), Some("3.12"));
        // Wrong types are refused whole, naming the problem.
        let e = Params::parse(br#"{"tcp":"yes","time":1}"#, peer()).expect_err("a string for a bool");
        assert!(e.to_string().contains("malformed parameters"), "{e}");
        assert!(Params::parse(br#"{"tcp":true,"parallel":[1]}"#, peer()).is_err());
        assert!(Params::parse(b"not json", peer()).is_err());
        let refuse = |t: &[u8]| Params::parse(t, peer()).expect("parses").check().expect_err("refused");
        assert!(refuse(br#"{"tcp":true,"time":1,"parallel":129}"#).contains("parallel"));
        assert!(refuse(br#"{"tcp":true,"time":1,"authtoken":"x"}"#).contains("RSA"));
        assert!(refuse(br#"{"tcp":true}"#).contains("no time"));
        assert!(refuse(br#"{"udp":true,"time":1,"congestion":"a b"}"#).contains("not a name"));
    }

    #[test]
    fn issue_26_results_read_minus_one_in_its_unsigned_form() {
        let text = br#"{"cpu_util_total":25.4,"cpu_util_user":0.9,"cpu_util_system":24.5,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":199229440,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.004442},{"id":3,"bytes":19922944,"retransmits":18446744073709551615,"jitter":3.4e-05,"errors":0,"packets":39,"start_time":0,"end_time":1.0}]}"#;
        let r = Results::parse(text, peer(), 2).expect("parses");
        assert_eq!(r.streams[0].retransmits(), Some(0));
        assert_eq!(r.streams[1].retransmits(), None);
        assert_eq!((r.streams[1].index(), r.streams[1].packets()), (Some(1), 39));
        assert_eq!(r.congestion().as_deref(), Some("bbr"));
        // A stream id given twice, or never made, is refused.
        let twice = br#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0},{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#;
        assert!(Results::parse(twice, peer(), 2).is_err());
        assert!(Results::parse(text, peer(), 1).is_err(), "id 3 is the second stream");
    }

    #[test]
    fn issue_26_states_round_trip_through_their_bytes() {
        for s in [
            State::AccessDenied,
            State::ServerError,
            State::TestEnd,
            State::IperfDone,
        ] {
            assert_eq!(State::from_byte(s.byte()), Some(s));
        }
        assert_eq!(State::AccessDenied.byte(), 0xff);
        assert_eq!(State::from_byte(3), None);
    }
}
