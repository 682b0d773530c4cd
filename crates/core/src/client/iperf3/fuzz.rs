//! Fuzzing the iperf3 client's results reader: an iperf3 server's results message,
//! mutated by `crate::fuzz` from real ones (iperf3 3.12's, and linerate's own as its iperf3 port
//! writes them), fed to what the client does with it: [`Results::parse`], the server's side
//! report ([`summary::iperf3::side_of`]), the checks ([`check_iperf3`]) and the document's copy
//! ([`summary::iperf3::peer_of`]), for a TCP and a UDP test each way. [`check`] is also what the
//! libFuzzer target `fuzz/fuzz_targets/iperf3_results.rs` calls (feature `fuzzing`).
//!
//! Properties: nothing panics or hangs; results that pass the checks hold no figure a run could
//! not give: no stream longer than the run, no more bytes or datagrams received than this end
//! sent, CPU within every CPU of a host, every figure finite; a refusal is one short line.

use crate::proto::iperf3::Results;
use crate::result::{Role, SideReport, StreamEnd, StreamReport, UdpSendReport};
use crate::spec::{Direction, TcpSpec, TestSpec, UdpSpec};
use crate::summary::{self, iperf3::check_iperf3};
use std::time::Duration;

/// Fails the check with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// How long each fuzzed run lasted on the client's clock.
const RUN: Duration = Duration::from_secs(10);
/// What this end sent or received on each stream, bytes and datagrams.
const SENT_BYTES: u64 = 1_000_000_000;
const SENT_DATAGRAMS: u64 = 100_000;
/// The longest a refusal's line may be: a figure is written short (`1e308`), a stream's id too.
const MAX_REFUSAL_CHARS: usize = 400;

/// The test, this end's roles and its own report, for each case the reader is fed in.
fn cases() -> Vec<(TestSpec, Vec<Role>, SideReport)> {
    let mut out = Vec::new();
    for (udp, direction) in [
        (false, Direction::Send),
        (false, Direction::Reverse),
        (true, Direction::Send),
        (true, Direction::Reverse),
    ] {
        let spec = if udp {
            let mut u = UdpSpec::new();
            u.direction = direction;
            u.streams = 2;
            TestSpec::Udp(u)
        } else {
            let mut t = TcpSpec::new();
            t.direction = direction;
            t.streams = 2;
            TestSpec::Tcp(t)
        };
        let role = if direction == Direction::Send {
            Role::Send
        } else {
            Role::Receive
        };
        let ours = vec![role; 2];
        let streams = (0..2u16)
            .map(|i| StreamReport {
                stream: i,
                role,
                bytes: SENT_BYTES,
                ops: SENT_DATAGRAMS,
                seconds: 10.0,
                total_bytes: SENT_BYTES,
                socket: Default::default(),
                tcp: None,
                errors: Default::default(),
                end: StreamEnd::Deadline,
                udp_send: (udp && role == Role::Send).then(|| UdpSendReport {
                    datagrams: SENT_DATAGRAMS,
                    ..UdpSendReport::default()
                }),
                udp_receive: None,
                rr: None,
            })
            .collect();
        let client = SideReport {
            streams,
            ..SideReport::default()
        };
        out.push((spec, ours, client));
    }
    out
}

/// What the iperf3 client does with a server's results message, with the properties checked.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    let peer = "127.0.0.1:5201".parse().expect("an address");
    for (spec, ours, client) in cases() {
        let udp = matches!(spec, TestSpec::Udp(_));
        let Ok(results) = Results::parse(data, peer, ours.len()) else {
            continue;
        };
        let side = summary::iperf3::side_of(&results, &ours, udp);
        if let Err(e) = check_iperf3(&spec, &results, &side, &client, RUN) {
            let line = e.to_string();
            ensure!(
                line.len() <= MAX_REFUSAL_CHARS && !line.contains('\n'),
                "a refusal of {} chars: {line:.200}",
                line.len()
            );
            continue;
        }
        for s in &side.streams {
            ensure!(
                s.seconds.is_finite() && s.seconds <= 10.0 + 30.0,
                "stream {} of {} s passed",
                s.stream,
                s.seconds
            );
            if s.role == Role::Receive {
                ensure!(
                    s.bytes <= SENT_BYTES,
                    "{} bytes received of {SENT_BYTES} passed",
                    s.bytes
                );
                if let Some(u) = &s.udp_receive {
                    ensure!(
                        u.datagrams <= SENT_DATAGRAMS && u.jitter_us.is_finite(),
                        "{u:?} of {SENT_DATAGRAMS} passed"
                    );
                }
            }
        }
        let cpu = &side.cpu;
        ensure!(
            cpu.process_user_seconds.is_finite() && cpu.process_system_seconds.is_finite(),
            "CPU {cpu:?} passed"
        );
        let kept = summary::iperf3::peer_of(&results, &ours, udp, "server", peer.to_string(), None, None);
        for p in [
            kept.cpu_util_total_percent,
            kept.cpu_util_user_percent,
            kept.cpu_util_system_percent,
        ]
        .into_iter()
        .flatten()
        {
            ensure!((0.0..=409_600.0).contains(&p), "CPU {p} % kept");
        }
        for s in &kept.streams {
            ensure!(
                s.seconds <= 40.0 && s.jitter_ms.is_none_or(|j| j.is_finite() && j <= 40_000.0),
                "{s:?} kept"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::CpuUsage;

    /// Real results: iperf3 3.12's (a sender, a receiver in its unsigned -1), and linerate's own
    /// for each case as its iperf3 port writes them.
    fn seeds() -> Vec<Vec<u8>> {
        let mut seeds = vec![
            br#"{"cpu_util_total":25.4,"cpu_util_user":0.9,"cpu_util_system":24.5,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":199229440,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.004442},{"id":3,"bytes":19922944,"retransmits":18446744073709551615,"jitter":3.4e-05,"errors":0,"packets":39,"start_time":0,"end_time":1.0}]}"#.to_vec(),
            br#"{"cpu_util_total":1e308,"cpu_util_user":1e308,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":18446744073709551615,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1e308}],"server_output_text":"x","server_output_json":{"start":{"version":"iperf 3.12"}}}"#.to_vec(),
        ];
        for (spec, ours, client) in cases() {
            let udp = matches!(spec, TestSpec::Udp(_));
            // The server's side: each stream in the other role, with what it counted.
            let mut side = client.clone();
            for (s, role) in side.streams.iter_mut().zip(&ours) {
                s.role = role.opposite();
                s.bytes = if s.role == Role::Send {
                    SENT_BYTES
                } else {
                    SENT_BYTES / 2
                };
                if udp && s.role == Role::Receive {
                    s.udp_send = None;
                    s.udp_receive = Some(crate::result::UdpReceiveReport {
                        datagrams: SENT_DATAGRAMS / 2,
                        lost: 10,
                        highest_plus_one: SENT_DATAGRAMS / 2 + 10,
                        jitter_us: 12.5,
                        ..Default::default()
                    });
                }
            }
            side.window_end_ns = 10_000_000_000;
            side.cpu = CpuUsage {
                process_user_seconds: 0.5,
                process_system_seconds: 2.0,
                ..CpuUsage::default()
            };
            let r = summary::iperf3::results_of(&side, udp);
            seeds.push(serde_json::to_vec(&r).expect("json"));
        }
        seeds
    }

    #[test]
    fn fuzz_iperf3_results_reader() {
        let seeds = seeds();
        let peer = "127.0.0.1:5201".parse().expect("an address");
        // The real ones read and pass; the lying one reads and is refused.
        for (i, s) in seeds.iter().enumerate() {
            assert!(Results::parse(s, peer, 2).is_ok(), "seed {i}");
            check(s).unwrap_or_else(|e| panic!("seed {i}: {e}"));
        }
        let figures = crate::fuzz::run("iperf3 results", &seeds, check);
        assert_eq!(figures.inputs, u64::from(crate::fuzz::cases()));
    }
}
