//! Fuzzing the control protocol's decoders: whole control sessions as a client and
//! an agent send them, built from the real message types, mutated by `crate::fuzz`, and fed to
//! the preamble, data-header, frame and message decoders the agent and the client run.
//! [`check`] is also what the libFuzzer target `fuzz/fuzz_targets/control.rs` calls (feature
//! `fuzzing`).
//!
//! Properties: no decoder panics or hangs; a frame is never taken longer than its prefix says
//! nor than the limit; a length past the limit is refused from its four bytes, before its body
//! is waited for (what keeps memory bounded); a message that decodes encodes again to one that
//! decodes to the same message.

use super::Message;
use super::auth::{Proof, ReplayCache, check_first_flight};
use super::frame::{
    self, DATA_HEADER_LEN, FIRST_FLIGHT_LEN, FrameError, MAX_MESSAGE_BYTES, MAX_REQUEST_BYTES, PREAMBLE_LEN, decode,
    decode_body, parse_data_header, parse_preamble,
};

/// Fails the check with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// What the agent and the client do with bytes from a peer, with the properties checked.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    if let Some(p) = data.get(..PREAMBLE_LEN) {
        let _ = parse_preamble(p.try_into().expect("eight bytes"));
    }
    // A first flight's proof, as an agent with a secret checks it at accept.
    if let Some(f) = data.get(..FIRST_FLIGHT_LEN) {
        let mut cache = ReplayCache::with_capacity(4);
        let proof = check_first_flight(b"fuzz", f.try_into().expect("a flight's length"), 0, &mut cache);
        ensure!(proof != Proof::Valid, "a mutated first flight passed mac1");
    }
    if let Some(h) = data.get(..DATA_HEADER_LEN) {
        let _ = parse_data_header(h.try_into().expect("a header's length"));
    }
    // The whole input as one message body, as `decode_body` sees a complete frame.
    if let Ok(msg) = decode_body(data) {
        round_trip(&msg)?;
    }
    // The input as a stream after a preamble (or without one), frame by frame, at both ends'
    // limits, as `Conn` takes it from its buffer.
    for start in [0, PREAMBLE_LEN.min(data.len())] {
        for max in [MAX_REQUEST_BYTES, MAX_MESSAGE_BYTES] {
            let mut rest = &data[start..];
            while let Some(prefix) = rest.get(..4) {
                let len = u32::from_be_bytes(prefix.try_into().expect("four bytes"));
                match decode(rest, max) {
                    Ok(Some((msg, used))) => {
                        ensure!(
                            len <= max && used == 4 + len as usize && used <= rest.len(),
                            "frame of {used} bytes from prefix {len}"
                        );
                        round_trip(&msg)?;
                        rest = &rest[used..];
                    }
                    Ok(None) => {
                        ensure!(
                            len <= max && rest.len() < 4 + len as usize,
                            "waits for {len} bytes with {} there",
                            rest.len()
                        );
                        break;
                    }
                    Err(FrameError::TooLarge { len: l, max: m }) => {
                        ensure!(
                            l == len && m == max && len > max,
                            "too large: {l} of {m} for prefix {len}"
                        );
                        break;
                    }
                    Err(FrameError::Json(text)) => {
                        ensure!(len <= max && !text.is_empty(), "unreadable but within {max}: {len}");
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

fn round_trip(msg: &Message) -> Result<(), String> {
    let Ok(bytes) = frame::encode(msg) else {
        // Larger than any limit once re-encoded (escapes grow): nothing to compare.
        return Ok(());
    };
    let again = decode(&bytes, MAX_MESSAGE_BYTES);
    ensure!(
        matches!(&again, Ok(Some((m, n))) if m == msg && *n == bytes.len()),
        "{} did not round-trip",
        msg.name()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::frame::{self, MAX_MESSAGE_BYTES, decode};
    use super::super::{ErrorKind, Message, VERSION};
    use super::check;
    use crate::metrics::host::{HostInfo, ReadHostInfo};
    use crate::result::{
        ErrorCounts, IntervalSample, Role, RrStreamReport, SideReport, SocketGrant, StreamEnd, StreamReport,
        UdpReceiveReport, UdpSendReport,
    };
    use crate::spec::{HttpSpec, RrSpec, TcpSpec, TestSpec, UdpSpec};

    /// An agent's report with the parts a real one has: streams of each kind, samples, notes.
    fn report() -> SideReport {
        let stream = |i: u16, role| StreamReport {
            stream: i,
            role,
            bytes: 655_360,
            ops: 5,
            seconds: 1.25,
            total_bytes: 655_360,
            socket: SocketGrant {
                sndbuf_bytes: 16_384,
                rcvbuf_bytes: 131_072,
                mss_bytes: 32_768,
                congestion: "bbr".into(),
                nodelay: false,
                zerocopy: None,
                dscp: None,
            },
            tcp: None,
            errors: ErrorCounts::default(),
            end: StreamEnd::Eof,
            udp_send: (i == 1).then(UdpSendReport::default),
            udp_receive: (i == 2).then(|| UdpReceiveReport {
                loss_picture: ".".repeat(64),
                spacing_histogram: "1c849303".into(),
                bins: vec![[0, 5], [1, 7]],
                ..UdpReceiveReport::default()
            }),
            rr: (i == 3).then(|| RrStreamReport {
                transactions: 10,
                latency_histogram: "1c84930300000021".into(),
                ..RrStreamReport::default()
            }),
        };
        SideReport {
            window_start_ns: 0,
            window_end_ns: 1_000_000_000,
            streams: vec![
                stream(0, Role::Receive),
                stream(1, Role::Send),
                stream(2, Role::Receive),
                stream(3, Role::Receive),
            ],
            intervals: (0..4)
                .map(|i| IntervalSample {
                    stream: i,
                    start_ns: 0,
                    end_ns: 1_000_000_000,
                    bytes: 131_072,
                    ops: 1,
                    tcp: None,
                })
                .collect(),
            io: "syscall".into(),
            notes: vec!["receiver saw end of stream".into()],
            ..SideReport::default()
        }
    }

    /// Every message of both directions, as real sessions carry them.
    fn messages() -> Vec<Message> {
        let specs = [
            TestSpec::Tcp(TcpSpec::new()),
            TestSpec::Udp(UdpSpec::default()),
            TestSpec::Rr(RrSpec::default()),
            TestSpec::Http(HttpSpec {
                urls: vec!["http://127.0.0.1:8080/bytes/1024".into()],
                users: 10,
                think_ms: 0.0,
                keepalive: true,
                timing: crate::spec::Timing::ramp(0.0, 5.0),
                rate: None,
                timeout_ms: 5_000,
                threads: 0,
                cpus: vec![],
                sched: Default::default(),
                tls: None,
                http2: None,
                probe: None,
            }),
        ];
        let mut all = vec![
            Message::Hello {
                software: "linerate 0.1.0".into(),
                challenge: Some("ab".repeat(32)),
            },
            Message::Hello {
                software: "linerate 0.1.0".into(),
                challenge: None,
            },
            Message::Auth {
                client_nonce: "cd".repeat(32),
                mac: "ef".repeat(32),
            },
            Message::AuthOk { mac: "01".repeat(32) },
            Message::Accepted {
                cookie: "11".repeat(16),
                host: HostInfo::read(),
                udp_ports: vec![40_000, 40_001],
            },
            Message::Ports {
                udp_ports: vec![50_000, 50_001],
            },
            Message::Start,
            Message::Profiles,
            Message::Clock,
            Message::ClockReading {
                unix_ns: 1_790_000_000_000_000_000,
                host_name: "h2".into(),
                node: Some("node-a".into()),
            },
            Message::Relay {
                spec: TestSpec::Tcp(crate::spec::TcpSpec::new()),
                to: "10.0.0.3:5301".parse().expect("an address"),
                start_at_unix_ns: Some(1_790_000_000_500_000_000),
            },
            Message::ProfileList {
                names: vec!["toe-off".into(), "toe-on".into()],
            },
            Message::Started,
            Message::Stop,
            Message::Result {
                report: Box::new(report()),
            },
            Message::Error {
                kind: ErrorKind::Busy,
                message: "the agent runs 4 tests, its most".into(),
            },
        ];
        // One asks for an agent profile, the others for none.
        all.extend(specs.into_iter().enumerate().map(|(i, spec)| Message::Request {
            spec,
            profile: (i == 0).then(|| "toe-off".to_string()),
        }));
        all
    }

    /// Seeds: each message as a frame, a client's and an agent's whole session (preamble and
    /// frames), and a data connection's header.
    fn seeds() -> Vec<Vec<u8>> {
        let msgs = messages();
        let framed: Vec<Vec<u8>> = msgs
            .iter()
            .map(|m| frame::encode(m).expect("seed messages fit"))
            .collect();
        let session = |names: &[&str]| {
            let mut s = frame::preamble(VERSION).to_vec();
            for (m, f) in msgs.iter().zip(&framed) {
                if names.contains(&m.name()) {
                    s.extend_from_slice(f);
                }
            }
            s
        };
        let mut seeds = framed.clone();
        seeds.push(session(&["auth", "request", "ports", "start", "stop"]));
        seeds.push(session(&["hello", "auth_ok", "accepted", "started", "result"]));
        seeds.push(frame::data_header(&[7; 16], 3).to_vec());
        seeds.push(super::super::auth::first_flight(b"seed", VERSION, 0, [9; 16]).to_vec());
        seeds
    }

    #[test]
    fn fuzz_control_frames_and_messages() {
        let seeds = seeds();
        // The seeds themselves decode: the harness starts from real sessions, not noise.
        for s in &seeds[..messages().len()] {
            assert!(matches!(decode(s, MAX_MESSAGE_BYTES), Ok(Some(_))));
        }
        let figures = crate::fuzz::run("control", &seeds, check);
        assert_eq!(figures.inputs, u64::from(crate::fuzz::cases()));
    }
}
