//! The HTTP user sweep (`--users a,b,c`, or `--find-optimum` doubling from 8), its optimum, and
//! `--baseline`: the same users against linerate's own server on this host, to tell a slow
//! server from a load generator at its limit.
//!
//! In: a base [`HttpSpec`], an [`HttpPoints`] and a closure that runs one spec. Out: a [`Sweep`]
//! of kind [`SweepKind::Http`]; an [`HttpBaseline`] that [`HttpBaseline::apply`] writes into a
//! result. The baseline's fetches and its server are the driver's (the binary's
//! `drive/http/baseline.rs`): here are what they read and run, no socket. The one-shot probe for
//! the object size parses the response head with httparse ([`probed_body_bytes`]), as the engine
//! does; the engine's own parser is private to `engine::http`.

use super::{At, HttpSweep, HttpSweepSummary, Parameter, Sweep, SweepKind, SweepPoint, UserLoad, optimum, push};
use crate::engine::http::{HttpTarget, HttpUrl};
use crate::httpd::HttpdError;
use crate::result::TestResult;
use crate::spec::{HttpSpec, Timing};
use std::io;
use std::net::SocketAddr;

pub use linerate_wire::sweep::http::HttpBaseline;

/// The user counts a sweep runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Users {
    /// These counts, in order.
    List(Vec<u32>),
    /// From 8, doubling until two doublings in a row add under 5 % to the responses per
    /// second (or 16,384 users).
    FindOptimum,
}

/// What a user sweep runs and what it compares each point with.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpPoints {
    pub users: Users,
    /// `--baseline`, measured before the sweep: written into every point's result.
    pub baseline: Option<HttpBaseline>,
}

/// Why `--baseline` could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("fetching {addr} once")]
    Probe {
        addr: SocketAddr,
        #[source]
        source: ProbeError,
    },
    #[error("starting linerate's own server")]
    Server(#[source] HttpdError),
}

/// Why fetching a URL once gave no body length.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("request")]
    Io(#[from] io::Error),
    #[error("closed before the response head")]
    Closed,
    #[error("response head over 64 KiB")]
    HeadTooLarge,
    #[error("unparseable response head")]
    BadHead(#[source] httparse::Error),
    #[error("the response has no Content-Length")]
    NoLength,
}

/// The longest response head the probe reads.
const PROBE_HEAD_MAX: usize = 65536;

/// What the probe has read of a response so far (`head`, from its first byte): the body's
/// length once the head is whole, None while it is not (read on), an error for a head past
/// 64 KiB or one without a Content-Length.
pub fn probed_body_bytes(head: &[u8]) -> Result<Option<u64>, ProbeError> {
    if let Some(len) = content_length(head)? {
        return len.ok_or(ProbeError::NoLength).map(Some);
    }
    if head.len() >= PROBE_HEAD_MAX {
        return Err(ProbeError::HeadTooLarge);
    }
    Ok(None)
}

/// The Content-Length of a complete response head at the start of `bytes`: None while the head
/// is incomplete, Some(None) when it has none.
fn content_length(bytes: &[u8]) -> Result<Option<Option<u64>>, ProbeError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(bytes).map_err(ProbeError::BadHead)? {
        httparse::Status::Partial => Ok(None),
        httparse::Status::Complete(_) => Ok(Some(
            response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok()),
        )),
    }
}

/// The baseline's load, once the targets' sizes are known (`sizes`, one per URL) and linerate's
/// own server listens at `server`: the same users against the server's `/bytes/N` of the mean
/// size, cleartext, without a ramp, at most 5 s of load and no interval samples (the cool-down
/// as asked). Returns the spec, its one target and the object size.
pub fn baseline_load(spec: &HttpSpec, sizes: &[u64], server: SocketAddr) -> (HttpSpec, HttpTarget, u64) {
    let object_bytes = sizes.iter().sum::<u64>() / sizes.len().max(1) as u64;
    let text = format!("http://{server}/bytes/{object_bytes}");
    let url = HttpUrl::parse(&text).expect("an address and a path make a URL");
    let mut b = spec.clone();
    b.urls = vec![text];
    // The baseline is cleartext: linerate's own server on its http port.
    b.tls = None;
    let seconds = spec.timing.limit.seconds().unwrap_or(5.0).min(5.0);
    b.timing = Timing {
        cooldown_seconds: spec.timing.cooldown_seconds,
        interval_seconds: 0.0,
        ..Timing::ramp(0.0, seconds)
    };
    let target = HttpTarget::new(&url, server, spec.keepalive).expect("an http URL names no TLS server");
    (b, target, object_bytes)
}

/// The most users `--find-optimum` tries.
const FIND_OPTIMUM_MAX_USERS: u32 = 16_384;

/// Runs the user counts of the plan through `run` (which validates and runs one spec),
/// calling `progress` once before the first point and after each. A point that fails ends the
/// sweep with its error; one cut short ends it as partial, without an optimum.
pub fn sweep<E>(
    base: &HttpSpec,
    plan: &HttpPoints,
    mut run: impl FnMut(&HttpSpec) -> Result<TestResult, E>,
    mut progress: impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<Sweep, E> {
    let asked = match &plan.users {
        Users::List(counts) => counts.iter().map(|n| f64::from(*n)).collect(),
        Users::FindOptimum => Vec::new(),
    };
    let mut sweep = Sweep::new(
        SweepKind::Http(HttpSweep {
            baseline: plan.baseline,
            summary: HttpSweepSummary { optimum: None },
        }),
        vec![Parameter {
            name: "users".into(),
            unit: "users".into(),
            values: asked,
        }],
    );
    progress(&sweep)?;
    let mut loads: Vec<UserLoad> = Vec::new();
    let mut users = match &plan.users {
        Users::List(counts) => match counts.first() {
            Some(n) => *n,
            None => return Ok(sweep),
        },
        Users::FindOptimum => 8,
    };
    let mut k = 0;
    loop {
        let mut spec = base.clone();
        spec.users = users;
        let mut r = run(&spec)?;
        if let Some(b) = &plan.baseline {
            b.apply(&mut r);
        }
        let h = r.summary.http.clone().unwrap_or_default();
        loads.push(UserLoad {
            users,
            // The throughput is what succeeded: fast 404s are no optimum.
            responses_per_second: h.successful_responses_per_second.unwrap_or(h.responses_per_second),
            bits_per_second_in: h.bits_per_second_in,
            response_time_mean_us: h.response_time_us.unwrap_or_default().mean,
        });
        if plan.users == Users::FindOptimum {
            sweep.parameters[0].values.push(f64::from(users));
        }
        if push(
            &mut sweep,
            SweepPoint::ran(At::Http { users }, String::new(), r),
            &mut progress,
        )? {
            return Ok(sweep);
        }
        k += 1;
        match &plan.users {
            Users::FindOptimum => {
                let n = loads.len();
                let flat = |i: usize| loads[i].responses_per_second < 1.05 * loads[i - 1].responses_per_second;
                if (n >= 3 && flat(n - 1) && flat(n - 2)) || users >= FIND_OPTIMUM_MAX_USERS {
                    break;
                }
                users *= 2;
            }
            Users::List(counts) => match counts.get(k) {
                Some(n) => users = *n,
                None => break,
            },
        }
    }
    if let SweepKind::Http(h) = &mut sweep.kind {
        h.summary.optimum = optimum(&loads);
    }
    Ok(sweep)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::result::Summary;
    use crate::result::{HttpSummary, Optimum};
    use crate::spec::TestSpec;
    use crate::sweep::stub_result;

    /// A server that saturates at 1000 responses/s: each user adds 100 until then.
    fn saturating(spec: &HttpSpec) -> TestResult {
        let summary = Summary {
            http: Some(HttpSummary {
                users: spec.users,
                responses_per_second: (100.0 * f64::from(spec.users)).min(1000.0),
                ..HttpSummary::default()
            }),
            ..Summary::default()
        };
        stub_result(TestSpec::Http(spec.clone()), summary)
    }

    /// A one-user load of one URL for 1 s, no interval samples.
    pub(crate) fn spec() -> HttpSpec {
        HttpSpec::one_user("http://127.0.0.1:1/", 1.0)
    }

    /// Points of `users` with a baseline of 1000 responses/s (8 Mbit/s in) at 4 users.
    fn with_baseline(users: Vec<u32>) -> HttpPoints {
        HttpPoints {
            users: Users::List(users),
            baseline: Some(HttpBaseline {
                responses_per_second: 1000.0,
                bits_per_second_in: 8e6,
                object_bytes: 1000,
                users: 4,
            }),
        }
    }

    fn optimum_of(s: &Sweep) -> Option<&Optimum> {
        match &s.kind {
            SweepKind::Http(h) => h.summary.optimum.as_ref(),
            other => panic!("{other:?}"),
        }
    }

    fn users_of(s: &Sweep) -> Vec<At> {
        s.points.iter().map(|p| p.at).collect()
    }

    #[test]
    fn a_list_runs_in_order_and_finds_the_knee() {
        let plan = HttpPoints {
            users: Users::List(vec![16, 4, 8]),
            baseline: None,
        };
        let s = sweep(&spec(), &plan, |s| Ok::<_, String>(saturating(s)), |_| Ok(())).expect("runs");
        assert_eq!(users_of(&s), [16, 4, 8].map(|users| At::Http { users }));
        assert_eq!(s.parameters[0].values, [16.0, 4.0, 8.0]);
        assert_eq!(
            optimum_of(&s).map(|o| o.users),
            Some(16),
            "4 and 8 fall short of 95 % of 1000"
        );
        // The document as printed: the paths readers use, and it reads back whole.
        let v = serde_json::to_value(&s).expect("serialises");
        assert_eq!(v["test"], "http sweep");
        assert_eq!(v["schema"], crate::result::SCHEMA);
        assert_eq!(v["summary"]["optimum"]["users"], 16);
        assert_eq!(v["points"][0]["users"], 16);
        assert_eq!(v["points"][0]["result"]["summary"]["responses_per_second"], 1000.0);
        // A result's rr or http summary does not read back through serde (the udp summary,
        // flattened before it into `summary`, takes the fields they share, `lost` and `errors`,
        // and fails): compare the sweep less its results.
        let mut bare = s.clone();
        bare.points.iter_mut().for_each(|p| p.result = None);
        assert_eq!(crate::sweep::read_back_without_results(v), bare);
    }

    /// A server that answers more users with more 404s, its successes flat from 4
    /// users on: the optimum is where the successes stop growing, not where the failures peak.
    #[test]
    fn issue_23_the_optimum_counts_successful_responses() {
        let plan = HttpPoints {
            users: Users::List(vec![4, 8, 16]),
            baseline: None,
        };
        let failing = |spec: &HttpSpec| {
            let mut r = saturating(spec);
            if let Some(h) = r.summary.http.as_mut() {
                h.successful_responses_per_second = Some(400.0);
            }
            Ok::<_, String>(r)
        };
        let s = sweep(&spec(), &plan, failing, |_| Ok(())).expect("runs");
        let o = optimum_of(&s).expect("an optimum");
        assert_eq!((o.users, o.responses_per_second), (4, 400.0));
    }

    #[test]
    fn find_optimum_doubles_until_flat() {
        let plan = HttpPoints {
            users: Users::FindOptimum,
            baseline: None,
        };
        let s = sweep(&spec(), &plan, |s| Ok::<_, String>(saturating(s)), |_| Ok(())).expect("runs");
        // 800/s at 8 users, 1000/s from 16 on: the doublings to 32 and 64 add nothing, so it
        // stops at 64, and 16 is the fewest users at the top.
        assert_eq!(users_of(&s), [8, 16, 32, 64].map(|users| At::Http { users }));
        assert_eq!(s.parameters[0].values, [8.0, 16.0, 32.0, 64.0]);
        assert_eq!(optimum_of(&s).map(|o| o.users), Some(16));
    }

    #[test]
    fn a_partial_sweep_has_no_optimum() {
        let plan = HttpPoints {
            users: Users::List(vec![4, 8, 16]),
            baseline: None,
        };
        let s = sweep(
            &spec(),
            &plan,
            |s| {
                let mut r = saturating(s);
                r.partial = s.users == 8;
                Ok::<_, String>(r)
            },
            |_| Ok(()),
        )
        .expect("runs");
        assert!(s.partial);
        assert_eq!(s.points.len(), 2);
        assert_eq!(optimum_of(&s), None);
    }

    #[test]
    fn the_baseline_goes_into_each_point_with_a_note_near_it() {
        let plan = with_baseline(vec![4, 16]);
        let s = sweep(&spec(), &plan, |s| Ok::<_, String>(saturating(s)), |_| Ok(())).expect("runs");
        let result = |i: usize| s.points[i].result.as_ref().expect("ran");
        let share = |i: usize| {
            result(i)
                .summary
                .http
                .as_ref()
                .and_then(|h| h.baseline)
                .map(|b| b.share_percent)
        };
        assert_eq!(share(0), Some(40.0));
        assert_eq!(share(1), Some(100.0));
        assert!(result(0).notes.is_empty());
        assert!(result(1).notes[0].starts_with("the load generator may be the bottleneck"));
        // The sweep's document keeps the baseline itself, and each point's result all of it.
        let v = serde_json::to_value(&s).expect("serialises");
        assert_eq!(v["baseline"]["responses_per_second"], 1000.0);
        assert_eq!(v["baseline"]["object_bytes"], 1000);
        assert_eq!(v["baseline"]["users"], 4);
        let back: Sweep = serde_json::from_value(v.clone()).expect("reads back");
        match &back.kind {
            SweepKind::Http(h) => assert_eq!(h.baseline, plan.baseline),
            other => panic!("{other:?}"),
        }
        let b = back.points[1]
            .result
            .as_ref()
            .and_then(|r| r.summary.http.as_ref()?.baseline);
        assert_eq!(
            b.as_ref().and_then(HttpBaseline::of),
            plan.baseline,
            "a stored run's result gives the whole baseline back"
        );
    }

    #[test]
    fn documents_from_before_the_baseline_was_kept_still_read() {
        let plan = with_baseline(vec![4]);
        let s = sweep(&spec(), &plan, |s| Ok::<_, String>(saturating(s)), |_| Ok(())).expect("runs");
        let mut v = serde_json::to_value(&s).expect("serialises");
        v.as_object_mut().expect("an object").remove("baseline");
        let b = v["points"][0]["result"]["summary"]["baseline"]
            .as_object_mut()
            .expect("baseline");
        b.remove("object_bytes");
        b.remove("users");
        let old: Sweep = serde_json::from_value(v).expect("an older sweep reads");
        match &old.kind {
            SweepKind::Http(h) => assert_eq!(h.baseline, None),
            other => panic!("{other:?}"),
        }
        let b = old.points[0]
            .result
            .as_ref()
            .and_then(|r| r.summary.http.as_ref()?.baseline);
        let b = b.expect("the run's baseline");
        assert_eq!((b.responses_per_second, b.object_bytes, b.users), (1000.0, None, None));
        assert_eq!(HttpBaseline::of(&b), None, "no line from half a baseline");
    }

    #[test]
    fn the_probe_reads_content_length_from_a_complete_head() {
        let head = b"HTTP/1.1 200 OK\r\nServer: x\r\ncontent-LENGTH:  524288 \r\n\r\nbody";
        assert_eq!(content_length(head).ok(), Some(Some(Some(524_288))));
        assert_eq!(content_length(&head[..20]).ok(), Some(None), "partial head");
        let none = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(content_length(none).ok(), Some(Some(None)));
        assert!(content_length(b"NOT HTTP\r\n\r\n").is_err());
    }

    #[test]
    fn the_probe_reads_on_until_the_head_is_whole() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
        assert_eq!(probed_body_bytes(&head[..10]).ok(), Some(None), "read on");
        assert_eq!(probed_body_bytes(head).ok(), Some(Some(1000)));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(probed_body_bytes(chunked), Err(ProbeError::NoLength)));
        let mut long = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        long.resize(PROBE_HEAD_MAX, b'a');
        assert!(matches!(probed_body_bytes(&long), Err(ProbeError::HeadTooLarge)));
        long.truncate(PROBE_HEAD_MAX - 1);
        assert_eq!(probed_body_bytes(&long).ok(), Some(None), "one byte short of the limit");
    }

    #[test]
    fn the_baseline_loads_the_mean_size_for_at_most_5_s_in_cleartext() {
        let mut asked = spec();
        asked.urls = vec!["https://example.com/a".into(), "https://example.com/b".into()];
        asked.tls = Some(Default::default());
        asked.users = 12;
        asked.timing = Timing {
            cooldown_seconds: 1.0,
            interval_seconds: 1.0,
            ..Timing::ramp(10.0, 60.0)
        };
        let server: SocketAddr = ([127, 0, 0, 1], 8080).into();
        let (b, target, object_bytes) = baseline_load(&asked, &[1000, 2001], server);
        assert_eq!(object_bytes, 1500, "the mean, rounded down");
        assert_eq!(b.urls, ["http://127.0.0.1:8080/bytes/1500"]);
        assert_eq!((b.tls.is_none(), b.users), (true, 12));
        assert_eq!(b.timing.limit.seconds(), Some(5.0));
        assert_eq!((b.timing.warmup_seconds, b.timing.interval_seconds), (0.0, 0.0));
        assert_eq!(b.timing.cooldown_seconds, 1.0);
        assert_eq!((target.addr, target.tls.is_none()), (server, true));
        asked.timing = Timing::ramp(0.0, 2.0);
        let (short, _, none) = baseline_load(&asked, &[], server);
        assert_eq!(
            (short.timing.limit.seconds(), none),
            (Some(2.0), 0),
            "a shorter test, no sizes"
        );
    }

    #[test]
    fn the_baseline_is_what_its_run_measured() {
        let mut r = saturating(&HttpSpec { users: 4, ..spec() });
        if let Some(h) = r.summary.http.as_mut() {
            h.bits_per_second_in = 8e6;
        }
        let b = HttpBaseline::measured(&r, 1000, 16);
        assert_eq!(
            b,
            HttpBaseline {
                responses_per_second: 400.0,
                bits_per_second_in: 8e6,
                object_bytes: 1000,
                users: 16,
            }
        );
    }
}
