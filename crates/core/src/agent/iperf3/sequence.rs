//! The server's control sequence as a state machine with no socket (esnet/iperf
//! `iperf_server_api.c`; the steps as Debian's 3.12 takes them): fed what the client sent and
//! what this end's streams and engine did, it says what to send and do next, what a state out
//! of turn means, and what the client is told when the test fails. `test.rs` drives it with
//! the I/O, so the order is tested here without an iperf3.

use crate::proto::ErrorKind;
use crate::proto::iperf3::{
    Checked, IEAUTHTEST, IENEWTEST, IERECVPARAMS, IERECVRESULTS, Iperf3Error, Params, Results, State, spec_of,
};
use crate::spec::{TestSpec, Validate};
use std::net::SocketAddr;

/// Why a test ended early: what the client is told (`i_errno` and `errno` after SERVER_ERROR; 0:
/// nothing, the connection just closes) and what the agent's owner hears.
#[derive(Debug, PartialEq)]
pub(super) struct Failure {
    pub i_errno: i32,
    pub errno: i32,
    pub kind: ErrorKind,
    pub message: String,
}

pub(super) fn failure(i_errno: i32, errno: i32, kind: ErrorKind, message: impl Into<String>) -> Failure {
    Failure {
        i_errno,
        errno,
        kind,
        message: message.into(),
    }
}

/// The control connection failed: nothing more is sent.
pub(super) fn gone(e: Iperf3Error) -> Failure {
    failure(0, 0, ErrorKind::Protocol, e.to_string())
}

/// Where the server is in its test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// PARAM_EXCHANGE sent; the parameters are due.
    Params,
    /// The parameters taken; the agent's limits are applied.
    Admitting,
    /// CREATE_STREAMS: the data streams are made.
    Streams,
    /// The engine runs; the client says when it ends (TEST_END).
    Running,
    /// The engine ended first; TEST_END is still due.
    EndDue,
    /// TEST_END heard; the engine's report is due.
    Ended,
    /// EXCHANGE_RESULTS sent; the client's results are due.
    ClientResults,
    /// DISPLAY_RESULTS sent; IPERF_DONE is due.
    Closing,
    Done,
    Failed,
}

/// What happened on the control connection or on this end.
#[derive(Debug)]
pub(super) enum Event<'a> {
    /// The client's parameter message, or why it was not read.
    Params(Result<&'a [u8], Iperf3Error>),
    /// The agent's limits took the test.
    Admitted,
    /// The data streams are made.
    StreamsOpen,
    /// A state the client sent.
    Received(State),
    /// The control connection failed while a state was due.
    Lost(Iperf3Error),
    /// The engine ended before the client said TEST_END.
    EngineDone,
    /// The agent is stopping.
    Stopping,
    /// The engine's report is in.
    Reported,
    /// The client's results message, or why it was not read.
    Results(Result<&'a [u8], Iperf3Error>),
}

/// What the I/O does next.
#[derive(Debug, PartialEq)]
pub(super) enum Action {
    Send(State),
    ReadParams,
    /// Apply the agent's limits to this test (its memory) and tell the owner it started.
    Admit(Box<(Checked, TestSpec)>),
    /// Ready the port for the streams, send CREATE_STREAMS, take the streams.
    OpenStreams,
    /// Run the engine, the control connection watched.
    Run,
    /// Read the client's state (TEST_END, after the engine ended first).
    ReadEnd,
    /// TEST_END: stop the senders, wake the receivers, let the engine end.
    StopSending,
    /// Stop the engine at once.
    Abort,
    /// A note for the document.
    Note(String),
    ReadResults,
    /// The client's results: keep them and send this end's.
    SendResults(Box<Results>),
    ReadDone,
    /// The test is over: make its document.
    Finish,
    /// The test is refused (counted as a refusal), the client told.
    Refuse(Failure),
    /// The test failed.
    Fail(Failure),
}

/// The server's side of one test's control sequence.
#[derive(Debug)]
pub(super) struct Sequence {
    phase: Phase,
    peer: SocketAddr,
    /// The test's streams, both ways: what the client's results may hold.
    streams: usize,
}

impl Sequence {
    /// The sequence for `peer`'s test (its cookie read, a slot taken), and its first steps.
    pub(super) fn start(peer: SocketAddr) -> (Sequence, Vec<Action>) {
        let s = Sequence {
            phase: Phase::Params,
            peer,
            streams: 0,
        };
        (s, vec![Action::Send(State::ParamExchange), Action::ReadParams])
    }

    #[cfg(test)]
    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// The next steps on `event`; an event out of turn fails the test.
    pub(super) fn handle(&mut self, event: Event<'_>) -> Vec<Action> {
        use {Action as A, Event as E, Phase as P};
        let (next, actions) = match (self.phase, event) {
            (P::Params, E::Params(message)) => return self.params(message),
            (P::Admitting, E::Admitted) => (P::Streams, vec![A::OpenStreams]),
            (P::Streams, E::StreamsOpen) => (
                P::Running,
                vec![A::Send(State::TestStart), A::Send(State::TestRunning), A::Run],
            ),
            (P::Running, E::Received(State::TestEnd)) => (P::Ended, vec![A::StopSending]),
            (P::Running, E::EngineDone) => (P::EndDue, vec![A::ReadEnd]),
            (P::Running, E::Stopping) => (
                P::Failed,
                vec![
                    A::Abort,
                    A::Send(State::ServerTerminate),
                    A::Fail(failure(
                        0,
                        0,
                        ErrorKind::Failed,
                        "the agent is stopping: the test was ended early",
                    )),
                ],
            ),
            (P::Running, E::Received(other)) => (
                P::Failed,
                vec![A::Abort, A::Fail(failure(0, 0, ErrorKind::Failed, out_of_turn(other)))],
            ),
            (P::Running, E::Lost(e)) => (
                P::Failed,
                vec![A::Abort, A::Fail(failure(0, 0, ErrorKind::Failed, e.to_string()))],
            ),
            // Its idle rule, or every stream ended on its own: the client still says when.
            (P::EndDue, E::Received(State::TestEnd)) => (
                P::Ended,
                vec![A::Note(
                    "this end's streams ended before the iperf3 client said the test was over".into(),
                )],
            ),
            (P::EndDue, E::Received(other)) => (
                P::Failed,
                vec![A::Fail(failure(0, 0, ErrorKind::Protocol, out_of_turn(other)))],
            ),
            // The results, as iperf3's server exchanges them: the client's first, then this end's.
            (P::Ended, E::Reported) => (P::ClientResults, vec![A::Send(State::ExchangeResults), A::ReadResults]),
            (P::ClientResults, E::Results(message)) => {
                let results = message.and_then(|bytes| Results::parse(bytes, self.peer, self.streams));
                match results {
                    Ok(r) => (
                        P::Closing,
                        vec![A::SendResults(Box::new(r)), A::Send(State::DisplayResults), A::ReadDone],
                    ),
                    Err(e) => (
                        P::Failed,
                        vec![A::Fail(failure(
                            IERECVRESULTS,
                            libc::EINVAL,
                            ErrorKind::Protocol,
                            e.to_string(),
                        ))],
                    ),
                }
            }
            (P::Closing, E::Received(State::IperfDone)) => (P::Done, vec![A::Finish]),
            (P::Closing, E::Received(other)) => (
                P::Done,
                vec![
                    A::Note(format!("the iperf3 client ended with state {other:?}, not IPERF_DONE")),
                    A::Finish,
                ],
            ),
            (P::Closing, E::Lost(e)) => (
                P::Done,
                vec![
                    A::Note(format!("the iperf3 client did not say IPERF_DONE: {e}")),
                    A::Finish,
                ],
            ),
            (_, E::Lost(e)) => (P::Failed, vec![A::Fail(gone(e))]),
            (phase, event) => (
                P::Failed,
                vec![A::Fail(failure(
                    0,
                    0,
                    ErrorKind::Protocol,
                    format!("{event:?} while {phase:?}"),
                ))],
            ),
        };
        self.phase = next;
        actions
    }

    /// The parameters: read, parsed, checked and made into a linerate spec, or refused with
    /// the i_errno iperf3's client prints sensibly.
    fn params(&mut self, message: Result<&[u8], Iperf3Error>) -> Vec<Action> {
        let refuse = |i_errno: i32, errno: i32, kind: ErrorKind, message: String| {
            vec![Action::Refuse(failure(i_errno, errno, kind, message))]
        };
        self.phase = Phase::Failed;
        let bytes = match message {
            Ok(b) => b,
            Err(e) => return refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::Protocol, e.to_string()),
        };
        let params = match Params::parse(bytes, self.peer) {
            Ok(p) => p,
            Err(e) => return refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::BadSpec, e.to_string()),
        };
        let checked = match params.check() {
            Ok(c) => c,
            Err(m) if params.authtoken.is_some() => return refuse(IEAUTHTEST, 0, ErrorKind::Auth, m),
            Err(m) => return refuse(IERECVPARAMS, libc::EINVAL, ErrorKind::BadSpec, m),
        };
        let spec = spec_of(&checked);
        if let Err(e) = spec.validate() {
            return refuse(IENEWTEST, libc::EINVAL, ErrorKind::BadSpec, e.to_string());
        }
        self.phase = Phase::Admitting;
        self.streams = spec.streams_per_agent();
        vec![Action::Admit(Box::new((checked, spec)))]
    }
}

/// The message for a client's state out of turn while its test ran.
fn out_of_turn(state: State) -> String {
    format!("sent {state:?} while its test ran")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Direction;
    use Action as A;
    use Event as E;

    fn peer() -> SocketAddr {
        "127.0.0.1:5201".parse().expect("addr")
    }

    const PARAMS: &[u8] = br#"{"tcp":true,"time":2,"parallel":2,"bidirectional":true}"#;

    /// One results message for four streams (two each way).
    fn results() -> Vec<u8> {
        let stream = |id: u64| {
            format!(
                r#"{{"id":{id},"bytes":1000,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2}}"#
            )
        };
        let streams: Vec<String> = [1, 3, 4, 5].into_iter().map(stream).collect();
        format!(
            r#"{{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":1,"streams":[{}]}}"#,
            streams.join(",")
        )
        .into_bytes()
    }

    /// The kind of the failure or refusal that ends `actions`.
    fn kind_of(actions: &[Action]) -> Option<ErrorKind> {
        match actions.last() {
            Some(A::Fail(f) | A::Refuse(f)) => Some(f.kind),
            _ => None,
        }
    }

    /// A sequence taken to the run.
    fn running() -> Sequence {
        let (mut s, _) = Sequence::start(peer());
        s.handle(E::Params(Ok(PARAMS)));
        s.handle(E::Admitted);
        s.handle(E::StreamsOpen);
        assert_eq!(s.phase(), Phase::Running);
        s
    }

    #[test]
    fn the_normal_sequence_runs_from_param_exchange_to_iperf_done() {
        let (mut s, first) = Sequence::start(peer());
        assert_eq!(first, [A::Send(State::ParamExchange), A::ReadParams]);
        let admit = s.handle(E::Params(Ok(PARAMS)));
        let [A::Admit(admitted)] = &admit[..] else {
            panic!("admit, not {admit:?}");
        };
        let TestSpec::Tcp(t) = &admitted.1 else {
            panic!("a TCP spec");
        };
        assert_eq!((t.streams, t.direction), (2, Direction::Bidir));
        assert_eq!(s.handle(E::Admitted), [A::OpenStreams]);
        assert_eq!(
            s.handle(E::StreamsOpen),
            [A::Send(State::TestStart), A::Send(State::TestRunning), A::Run]
        );
        assert_eq!(s.handle(E::Received(State::TestEnd)), [A::StopSending]);
        assert_eq!(s.handle(E::Reported), [A::Send(State::ExchangeResults), A::ReadResults]);
        let sent = s.handle(E::Results(Ok(&results())));
        assert!(
            matches!(&sent[..], [A::SendResults(r), A::Send(State::DisplayResults), A::ReadDone] if r.streams.len() == 4),
            "the client's results kept, this end's sent, then DISPLAY_RESULTS: {sent:?}"
        );
        assert_eq!(s.handle(E::Received(State::IperfDone)), [A::Finish]);
        assert_eq!(s.phase(), Phase::Done);
    }

    #[test]
    fn results_are_read_from_the_client_before_this_ends_are_sent() {
        let mut s = running();
        s.handle(E::Received(State::TestEnd));
        // EXCHANGE_RESULTS asks for the client's first: nothing of this end's is sent yet.
        let asked = s.handle(E::Reported);
        assert!(!asked.iter().any(|a| matches!(a, A::SendResults(_))), "{asked:?}");
        // Results for a stream the test does not have are refused with IERECVRESULTS.
        let bad = br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":99,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#;
        let failed = s.handle(E::Results(Ok(bad)));
        let [A::Fail(f)] = &failed[..] else {
            panic!("a failure, not {failed:?}");
        };
        assert_eq!((f.i_errno, f.kind), (IERECVRESULTS, ErrorKind::Protocol));
        assert_eq!(s.phase(), Phase::Failed);
    }

    #[test]
    fn bad_parameters_are_refused_with_iperf3s_error_numbers() {
        for (json, i_errno, kind) in [
            (&b"{not json"[..], IERECVPARAMS, ErrorKind::BadSpec),
            (br#"{"tcp":true,"udp":true,"time":1}"#, IERECVPARAMS, ErrorKind::BadSpec),
            (br#"{"tcp":true,"time":1,"authtoken":"x"}"#, IEAUTHTEST, ErrorKind::Auth),
            // Checks, but no linerate spec takes 2^30-byte datagrams.
            (
                br#"{"udp":true,"time":1,"len":1073741824}"#,
                IENEWTEST,
                ErrorKind::BadSpec,
            ),
        ] {
            let (mut s, _) = Sequence::start(peer());
            let refused = s.handle(E::Params(Ok(json)));
            let [A::Refuse(f)] = &refused[..] else {
                panic!("refused, not {refused:?}");
            };
            assert_eq!(
                (f.i_errno, f.kind),
                (i_errno, kind),
                "{}",
                String::from_utf8_lossy(json)
            );
            assert_eq!(s.phase(), Phase::Failed);
        }
        let (mut s, _) = Sequence::start(peer());
        let lost = Iperf3Error::Closed {
            peer: peer(),
            what: "sending its parameters",
        };
        let refused = s.handle(E::Params(Err(lost)));
        assert_eq!(kind_of(&refused), Some(ErrorKind::Protocol), "{refused:?}");
    }

    #[test]
    fn an_unexpected_state_mid_test_aborts_the_engine() {
        let mut s = running();
        let failed = s.handle(E::Received(State::ClientTerminate));
        assert_eq!(
            failed,
            [
                A::Abort,
                A::Fail(failure(
                    0,
                    0,
                    ErrorKind::Failed,
                    "sent ClientTerminate while its test ran"
                ))
            ],
            "the client is told nothing: it ended the test"
        );
        // A state out of turn after the run's end: the connection closes with no error sent.
        let mut s = running();
        s.handle(E::Received(State::TestEnd));
        let failed = s.handle(E::Received(State::TestStart));
        assert!(matches!(&failed[..], [A::Fail(f)] if f.i_errno == 0), "{failed:?}");
    }

    #[test]
    fn a_client_gone_or_an_agent_stopping_mid_test_ends_it() {
        let mut s = running();
        let closed = Iperf3Error::Closed {
            peer: peer(),
            what: "running its test",
        };
        let failed = s.handle(E::Lost(closed));
        assert!(matches!(&failed[..], [A::Abort, A::Fail(f)] if f.message.contains("closed the control connection")));
        let mut s = running();
        let stopped = s.handle(E::Stopping);
        assert_eq!(stopped[..2], [A::Abort, A::Send(State::ServerTerminate)]);
    }

    #[test]
    fn an_engine_that_ends_first_still_waits_for_test_end() {
        let mut s = running();
        assert_eq!(s.handle(E::EngineDone), [A::ReadEnd]);
        let noted = s.handle(E::Received(State::TestEnd));
        assert!(matches!(&noted[..], [A::Note(n)] if n.contains("ended before")));
        assert_eq!(s.phase(), Phase::Ended);
        let mut s = running();
        s.handle(E::EngineDone);
        let failed = s.handle(E::Received(State::IperfDone));
        assert_eq!(kind_of(&failed), Some(ErrorKind::Protocol), "{failed:?}");
    }

    #[test]
    fn a_client_that_ends_without_iperf_done_leaves_a_note() {
        let mut s = running();
        s.handle(E::Received(State::TestEnd));
        s.handle(E::Reported);
        s.handle(E::Results(Ok(&results())));
        let noted = s.handle(E::Received(State::TestEnd));
        assert!(matches!(&noted[..], [A::Note(n), A::Finish] if n.contains("TestEnd, not IPERF_DONE")));
    }
}
