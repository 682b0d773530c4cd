//! The client's control sequence as a state machine with no socket: fed each state the server
//! sends, the server's results message and the end this end decides, it says what to do next,
//! and what any state out of turn or results message refused stands for. `mod.rs`, `server.rs` and
//! `watch.rs` drive it with the I/O, so the order iperf3 3.12's client keeps
//! (`iperf_client_api.c`) is tested here without an iperf3.

use crate::proto::iperf3::{Iperf3Error, Results, State};
use std::net::SocketAddr;

/// Where the client is in its test: the step it waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// The cookie sent; PARAM_EXCHANGE is due.
    ParamExchange,
    CreateStreams,
    TestStart,
    TestRunning,
    /// The engine runs; this end decides the end (TEST_END).
    Running,
    ExchangeResults,
    /// This end's results sent; the server's are due.
    ServerResults,
    DisplayResults,
    /// IPERF_DONE sent.
    Done,
    /// Refused or ended by the server.
    Failed,
}

/// What happened on the control connection or on this end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Event<'a> {
    /// A state the server sent.
    Received(State),
    /// The end rule says the test is over.
    EndDue,
    /// The server's results message.
    ServerResults(&'a [u8]),
}

/// What the I/O does next.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Action {
    /// Nothing: wait for the next state.
    Wait,
    /// Send the parameters.
    SendParams,
    /// Open the data streams.
    CreateStreams,
    /// Run the engine, the control connection watched.
    Run,
    /// Send TEST_END.
    SendTestEnd,
    /// Send this end's results, then read the server's.
    ExchangeResults,
    /// The server's results, read and checked: keep them (DISPLAY_RESULTS is due).
    Keep(Box<Results>),
    /// Send IPERF_DONE: the test is over.
    SendDone,
    /// The server refused the test or ended it.
    Refused(Refusal),
}

/// What a state out of turn, or a message refused, stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// ACCESS_DENIED: the server runs another test.
    Busy,
    /// SERVER_ERROR: its i_errno and errno follow on the wire.
    ServerError,
    /// SERVER_TERMINATE.
    Terminated,
    /// Any other state.
    Unexpected(State),
    /// A results message that is not the answer to this test: why.
    Malformed(String),
}

/// The client's side of one test's control sequence.
#[derive(Debug)]
pub(super) struct Sequence {
    phase: Phase,
    peer: SocketAddr,
    /// The test's streams, both ways: what the server's results may name.
    streams: usize,
}

impl Sequence {
    pub(super) fn new(peer: SocketAddr, streams: usize) -> Sequence {
        Sequence {
            phase: Phase::ParamExchange,
            peer,
            streams,
        }
    }

    #[cfg(test)]
    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// What the client is doing now, as its errors say it.
    pub(super) fn waiting(&self) -> &'static str {
        match self.phase {
            Phase::ParamExchange => "waiting for the parameter exchange",
            Phase::CreateStreams => "waiting to create the streams",
            Phase::TestStart => "waiting for the test to start",
            Phase::TestRunning => "waiting for the test to run",
            Phase::Running => "the test ran",
            Phase::ExchangeResults => "waiting to exchange the results",
            Phase::ServerResults => "reading the server's results",
            Phase::DisplayResults => "waiting for the results to be displayed",
            Phase::Done | Phase::Failed => "the test was over",
        }
    }

    /// The next step on `event`. A state out of turn fails the test (the server's refusal or
    /// end), as does a results message refused; a step of this end's out of turn changes
    /// nothing.
    pub(super) fn handle(&mut self, event: Event<'_>) -> Action {
        use Event::{EndDue, Received, ServerResults};
        let (next, action) = match (self.phase, event) {
            (Phase::ParamExchange, Received(State::ParamExchange)) => (Phase::CreateStreams, Action::SendParams),
            (Phase::CreateStreams, Received(State::CreateStreams)) => (Phase::TestStart, Action::CreateStreams),
            (Phase::TestStart, Received(State::TestStart)) => (Phase::TestRunning, Action::Wait),
            (Phase::TestRunning, Received(State::TestRunning)) => (Phase::Running, Action::Run),
            (Phase::Running, EndDue) => (Phase::ExchangeResults, Action::SendTestEnd),
            (Phase::ExchangeResults, Received(State::ExchangeResults)) => {
                (Phase::ServerResults, Action::ExchangeResults)
            }
            (Phase::ServerResults, ServerResults(bytes)) => match Results::parse(bytes, self.peer, self.streams) {
                Ok(r) => (Phase::DisplayResults, Action::Keep(Box::new(r))),
                Err(Iperf3Error::Bad { what, .. }) => (Phase::Failed, Action::Refused(Refusal::Malformed(what))),
                Err(e) => (Phase::Failed, Action::Refused(Refusal::Malformed(e.to_string()))),
            },
            (Phase::DisplayResults, Received(State::DisplayResults)) => (Phase::Done, Action::SendDone),
            (_, Received(state)) => (Phase::Failed, Action::Refused(refusal(state))),
            (phase, EndDue | ServerResults(_)) => (phase, Action::Wait),
        };
        self.phase = next;
        action
    }
}

/// What a state other than the one due stands for.
fn refusal(state: State) -> Refusal {
    match state {
        State::AccessDenied => Refusal::Busy,
        State::ServerError => Refusal::ServerError,
        State::ServerTerminate => Refusal::Terminated,
        other => Refusal::Unexpected(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Event::{EndDue, Received, ServerResults};

    /// Results for one stream, as a server sends them.
    const RESULTS: &[u8] = br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":1000,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1}]}"#;

    fn new() -> Sequence {
        Sequence::new("127.0.0.1:5201".parse().expect("addr"), 1)
    }

    /// The sequence fed `events`: the actions, and the phase it ends in.
    fn run(events: &[Event<'_>]) -> (Vec<Action>, Phase) {
        let mut s = new();
        let actions = events.iter().map(|e| s.handle(*e)).collect();
        (actions, s.phase())
    }

    const NORMAL: [Event<'static>; 8] = [
        Received(State::ParamExchange),
        Received(State::CreateStreams),
        Received(State::TestStart),
        Received(State::TestRunning),
        EndDue,
        Received(State::ExchangeResults),
        ServerResults(RESULTS),
        Received(State::DisplayResults),
    ];

    #[test]
    fn the_normal_sequence_sends_params_streams_test_end_results_and_done() {
        let (actions, phase) = run(&NORMAL);
        assert_eq!(
            actions,
            [
                Action::SendParams,
                Action::CreateStreams,
                Action::Wait,
                Action::Run,
                Action::SendTestEnd,
                Action::ExchangeResults,
                Action::Keep(Box::new(
                    Results::parse(RESULTS, "127.0.0.1:1".parse().expect("addr"), 1).expect("parses")
                )),
                Action::SendDone,
            ]
        );
        assert_eq!(phase, Phase::Done);
    }

    #[test]
    fn a_results_message_that_is_not_this_tests_answer_is_refused() {
        for (bad, why) in [
            (&b"{not json"[..], "malformed results"),
            (br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":4,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#, "never made"),
        ] {
            let (actions, phase) = run(&[&NORMAL[..6], &[ServerResults(bad)]].concat());
            assert!(
                matches!(&actions[6], Action::Refused(Refusal::Malformed(w)) if w.contains(why)),
                "{:?}",
                actions[6]
            );
            assert_eq!(phase, Phase::Failed);
        }
    }

    #[test]
    fn results_are_sent_before_the_servers_are_read_and_displayed_after() {
        // DISPLAY_RESULTS before the server's results were read is out of turn.
        let (actions, phase) = run(&[&NORMAL[..6], &[Received(State::DisplayResults)]].concat());
        assert_eq!(
            actions[5],
            Action::ExchangeResults,
            "ours first: the server reads them, then sends its own"
        );
        assert_eq!(actions[6], Action::Refused(Refusal::Unexpected(State::DisplayResults)));
        assert_eq!(phase, Phase::Failed);
        // The results exchange is not begun before TEST_END was sent.
        let (actions, _) = run(&[&NORMAL[..4], &[Received(State::ExchangeResults)]].concat());
        assert_eq!(actions[4], Action::Refused(Refusal::Unexpected(State::ExchangeResults)));
    }

    #[test]
    fn a_state_out_of_turn_is_the_refusal_it_stands_for() {
        for (state, refusal) in [
            (State::AccessDenied, Refusal::Busy),
            (State::ServerError, Refusal::ServerError),
            (State::ServerTerminate, Refusal::Terminated),
            (State::TestStart, Refusal::Unexpected(State::TestStart)),
            (State::IperfDone, Refusal::Unexpected(State::IperfDone)),
        ] {
            let (actions, phase) = run(&[Received(state)]);
            assert_eq!(
                (&actions[0], phase),
                (&Action::Refused(refusal), Phase::Failed),
                "{state:?}"
            );
        }
        // A second PARAM_EXCHANGE is out of turn too.
        let (actions, _) = run(&[Received(State::ParamExchange), Received(State::ParamExchange)]);
        assert_eq!(actions[1], Action::Refused(Refusal::Unexpected(State::ParamExchange)));
    }

    #[test]
    fn a_server_that_terminates_mid_test_fails_it() {
        let (actions, phase) = run(&[&NORMAL[..4], &[Received(State::ServerTerminate), EndDue]].concat());
        assert_eq!(actions[4], Action::Refused(Refusal::Terminated));
        assert_eq!(actions[5], Action::Wait, "no TEST_END after the server ended it");
        assert_eq!(phase, Phase::Failed);
        let mut s = new();
        for e in &NORMAL[..4] {
            s.handle(*e);
        }
        assert_eq!(s.waiting(), "the test ran");
        assert_eq!(
            s.handle(Received(State::ServerError)),
            Action::Refused(Refusal::ServerError)
        );
    }

    #[test]
    fn this_ends_steps_out_of_turn_change_nothing() {
        let (actions, phase) = run(&[EndDue, ServerResults(RESULTS), Received(State::ParamExchange)]);
        assert_eq!(actions, [Action::Wait, Action::Wait, Action::SendParams]);
        assert_eq!(phase, Phase::CreateStreams);
    }
}
