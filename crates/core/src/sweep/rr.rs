//! The request-response size sweep: one run per size in the order given, latency against size,
//! its least-squares line (through each point's p50) and the slope the path should give. A point
//! that fails is recorded with its error and the sweep goes on.
//!
//! In: a base [`RrSpec`], an [`RrPoints`] (with the [`PathToward`] the first agent, read by the
//! caller) and a closure that runs one spec. Out: a [`Sweep`] of kind [`SweepKind::Rr`].

use super::{
    At, Parameter, RrSweep, RrSweepSummary, RrVaries, SizeLatency, Sweep, SweepKind, SweepPoint, expected_slope, fit,
    push,
};
use crate::result::TestResult;
use crate::spec::{RrProto, RrSpec};
use std::fmt::Display;
use std::net::IpAddr;

/// The interface the sweep's packets leave by, as far as this host knows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathToward {
    pub interface: Option<String>,
    pub mtu_bytes: Option<u32>,
    /// The interface's link speed; None on loopback, veth and the like.
    pub link_bits_per_second: Option<f64>,
}

impl PathToward {
    /// The interface of the route toward `peer` and its MTU and speed.
    pub fn read(peer: IpAddr) -> PathToward {
        let interface = crate::metrics::host::interface_towards(peer);
        let config = interface.as_ref().and_then(|n| {
            crate::metrics::host::read_config(std::slice::from_ref(n))
                .interfaces
                .pop()
        });
        PathToward {
            interface,
            mtu_bytes: config.as_ref().and_then(|i| i.mtu_bytes),
            link_bits_per_second: config
                .as_ref()
                .and_then(|i| i.speed_mbit_per_second)
                .map(|m| f64::from(m) * 1e6),
        }
    }
}

/// What a size sweep varies and what it is compared with.
#[derive(Clone, Debug, PartialEq)]
pub struct RrPoints {
    pub sizes_bytes: Vec<u32>,
    /// Which message grows.
    pub varies: RrVaries,
    /// `--expect`: bandwidths of the path's stages, bits/s; empty: the link speed of the path.
    pub expect_bits_per_second: Vec<f64>,
    pub path: PathToward,
}

/// Runs every size through `run` (which validates and runs one spec), calling `progress` once
/// before the first point and after each. A failed point is recorded and the sweep goes on; a
/// point cut short ends it as partial. Only `progress`'s own errors end it early.
pub fn sweep<E: Display>(
    base: &RrSpec,
    plan: &RrPoints,
    mut run: impl FnMut(&RrSpec) -> Result<TestResult, E>,
    mut progress: impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<Sweep, E> {
    let (stages, expected_from) = if plan.expect_bits_per_second.is_empty() {
        match (&plan.path.interface, plan.path.link_bits_per_second) {
            (Some(name), Some(speed)) => (vec![speed], Some(format!("link speed of {name}"))),
            _ => (Vec::new(), None),
        }
    } else {
        (plan.expect_bits_per_second.clone(), Some("--expect".to_string()))
    };
    let crossings = if plan.varies == RrVaries::Both { 2.0 } else { 1.0 };
    let expected = (!stages.is_empty()).then(|| crossings * expected_slope(&stages));
    let rr = RrSweep {
        proto: base.proto,
        sweep: plan.varies,
        interface: plan.path.interface.clone(),
        mtu_bytes: plan.path.mtu_bytes,
        summary: RrSweepSummary {
            fit: None,
            fit_of: "p50".into(),
            expected_slope_us_per_byte: expected,
            expected_from: expected.and(expected_from),
            expected_stages_bits_per_second: stages,
        },
    };
    let mut sweep = Sweep::new(
        SweepKind::Rr(rr),
        vec![Parameter {
            name: "request_bytes".into(),
            unit: "bytes".into(),
            values: plan.sizes_bytes.iter().map(|s| f64::from(*s)).collect(),
        }],
    );
    progress(&sweep)?;
    let mut line = Vec::new();
    for (i, &size) in plan.sizes_bytes.iter().enumerate() {
        let mut spec = base.clone();
        spec.request_bytes = size;
        if plan.varies == RrVaries::Both {
            spec.response_bytes = size;
        }
        spec.timing.interval_seconds = 0.0;
        let at = At::Rr {
            request_bytes: spec.request_bytes,
            response_bytes: spec.response_bytes,
        };
        let mut note = plan
            .path
            .mtu_bytes
            .and_then(|m| over_mtu_note(base.proto, size, m))
            .unwrap_or_default();
        let point = match run(&spec) {
            Ok(r) => {
                if r.partial {
                    note = join_note(&note, "interrupted");
                }
                match r.summary.rr.as_ref().and_then(|s| s.latency_us) {
                    Some(l) => line.push(SizeLatency {
                        bytes: f64::from(size),
                        latency_us: l.p50,
                    }),
                    None => note = join_note(&note, "no transaction completed"),
                }
                SweepPoint::ran(at, note, r)
            }
            Err(e) => {
                let error = format!("{e:#}");
                SweepPoint {
                    at,
                    note: join_note(&note, &format!("failed: {error}")),
                    result: None,
                    error: Some(error),
                }
            }
        };
        if push(&mut sweep, point, &mut progress)? {
            break;
        }
        if i + 1 == plan.sizes_bytes.len() {
            // Every size ran and none was cut short: the line is the sweep's.
            if let SweepKind::Rr(rr) = &mut sweep.kind {
                rr.summary.fit = fit(&line);
            }
        }
    }
    Ok(sweep)
}

fn join_note(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}; {b}")
    }
}

/// A message larger than one packet: how the stack splits it.
fn over_mtu_note(proto: RrProto, size: u32, mtu: u32) -> Option<String> {
    match proto {
        RrProto::Udp if size + 28 > mtu => {
            // Every fragment but the last carries a multiple of 8 bytes after its 20-byte IP header.
            let per = (mtu.saturating_sub(20) / 8 * 8).max(8);
            Some(format!("over MTU {mtu}: {} IP fragments", (size + 8).div_ceil(per)))
        }
        RrProto::Tcp if size + 40 > mtu => Some(format!(
            "over MTU {mtu}: ~{} TCP segments",
            size.div_ceil(mtu.saturating_sub(52).max(1))
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Summary;
    use crate::result::{LatencyFigures, RrSummary};
    use crate::spec::TestSpec;
    use crate::sweep::stub_result;

    /// A result whose p50 lies on 10 us + 0.01 us per byte.
    fn on_a_line(spec: &RrSpec) -> TestResult {
        let p50 = 10.0 + 0.01 * f64::from(spec.request_bytes);
        let summary = Summary {
            rr: Some(RrSummary {
                latency_us: Some(LatencyFigures {
                    p50,
                    ..LatencyFigures::default()
                }),
                ..RrSummary::default()
            }),
            ..Summary::default()
        };
        stub_result(TestSpec::Rr(spec.clone()), summary)
    }

    fn plan(sizes: &[u32]) -> RrPoints {
        RrPoints {
            sizes_bytes: sizes.to_vec(),
            varies: RrVaries::Both,
            expect_bits_per_second: vec![10e9],
            path: PathToward {
                interface: Some("eth0".into()),
                mtu_bytes: Some(1500),
                link_bits_per_second: Some(1e9),
            },
        }
    }

    fn summary(s: &Sweep) -> &RrSweepSummary {
        match &s.kind {
            SweepKind::Rr(rr) => &rr.summary,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_fit_goes_through_the_p50s_and_failures_are_kept() {
        let s = sweep(
            &RrSpec::new(),
            &plan(&[100, 1000, 2000, 3000]),
            |spec| {
                if spec.request_bytes == 2000 {
                    Err("refused".to_string())
                } else {
                    Ok(on_a_line(spec))
                }
            },
            |_| Ok(()),
        )
        .expect("progress never fails");
        assert_eq!(s.points.len(), 4, "the sweep goes on past a failure");
        assert!(!s.partial);
        assert_eq!(s.points[2].error.as_deref(), Some("refused"));
        assert!(s.points[2].note.ends_with("failed: refused"), "{}", s.points[2].note);
        assert_eq!(s.points[0].note, "");
        assert_eq!(s.points[3].note, "over MTU 1500: ~3 TCP segments");
        assert_eq!(
            s.points[1].at,
            At::Rr {
                request_bytes: 1000,
                response_bytes: 1000
            }
        );
        let f = summary(&s).fit.expect("a fit");
        assert!(
            (f.slope_us_per_byte - 0.01).abs() < 1e-12 && (f.intercept_us - 10.0).abs() < 1e-9,
            "{f:?}"
        );
        assert_eq!(f.points, 3);
        // --expect wins over the link speed; both messages grow: bytes cross twice.
        assert_eq!(summary(&s).expected_from.as_deref(), Some("--expect"));
        assert!((summary(&s).expected_slope_us_per_byte.expect("slope") - 2.0 * 0.0008).abs() < 1e-12);
        // The document as printed: the paths readers use, and it reads back whole.
        let v = serde_json::to_value(&s).expect("serialises");
        assert_eq!(v["test"], "rr sweep");
        assert_eq!(
            (&v["proto"], &v["sweep"], &v["mtu_bytes"]),
            (&"tcp".into(), &"both".into(), &1500.into())
        );
        assert_eq!(v["summary"]["fit"]["points"], 3);
        assert_eq!(v["summary"]["fit_of"], "p50");
        assert_eq!(v["points"][1]["request_bytes"], 1000);
        assert_eq!(v["points"][1]["result"]["test"], "rr");
        assert_eq!(v["points"][2]["error"], "refused");
        assert!(v["points"][2].get("result").is_none());
        // A result's rr or http summary does not read back through serde (the udp summary,
        // flattened before it into `summary`, takes the fields they share, `lost` and `errors`,
        // and fails): compare the sweep less its results.
        let mut bare = s.clone();
        bare.points.iter_mut().for_each(|p| p.result = None);
        assert_eq!(crate::sweep::read_back_without_results(v), bare);
    }

    #[test]
    fn a_partial_sweep_derives_nothing() {
        let s = sweep(
            &RrSpec::new(),
            &plan(&[100, 1000, 2000]),
            |spec| {
                let mut r = on_a_line(spec);
                r.partial = spec.request_bytes == 1000;
                Ok::<_, String>(r)
            },
            |_| Ok(()),
        )
        .expect("no error");
        assert!(s.partial);
        assert_eq!(s.points.len(), 2, "an interrupted point ends the sweep");
        assert_eq!(s.points[1].note, "interrupted");
        assert_eq!(summary(&s).fit, None);
    }

    #[test]
    fn the_link_speed_gives_the_expected_slope_without_expect() {
        let mut p = plan(&[100]);
        p.expect_bits_per_second.clear();
        p.varies = RrVaries::Request;
        let s = sweep(&RrSpec::new(), &p, |spec| Ok::<_, String>(on_a_line(spec)), |_| Ok(())).expect("runs");
        assert_eq!(summary(&s).expected_from.as_deref(), Some("link speed of eth0"));
        assert_eq!(summary(&s).fit, None, "one size: no line");
        p.path.link_bits_per_second = None;
        let s = sweep(&RrSpec::new(), &p, |spec| Ok::<_, String>(on_a_line(spec)), |_| Ok(())).expect("runs");
        assert_eq!(summary(&s).expected_slope_us_per_byte, None);
        assert_eq!(summary(&s).expected_from, None);
    }

    #[test]
    fn over_mtu_notes_count_fragments_and_segments() {
        assert_eq!(over_mtu_note(RrProto::Udp, 1472, 1500), None);
        assert_eq!(
            over_mtu_note(RrProto::Udp, 9000, 1500).as_deref(),
            Some("over MTU 1500: 7 IP fragments")
        );
        assert_eq!(over_mtu_note(RrProto::Tcp, 1000, 1500), None);
    }
}
