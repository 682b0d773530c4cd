//! The UDP sweep (UDPmon's curves): one run per (gap, size), gaps outer, sizes inner; received
//! throughput and loss against spacing come from each point's own result.
//!
//! In: a base [`UdpSpec`], a [`UdpPoints`] and a closure that runs one spec. Out: a [`Sweep`].

use super::{At, Parameter, Sweep, SweepKind, SweepPoint, push};
use crate::result::TestResult;
use crate::spec::UdpSpec;

/// The sizes and gaps of a UDP sweep, each in the order given, without repeats.
#[derive(Clone, Debug, PartialEq)]
pub struct UdpPoints {
    pub sizes_bytes: Vec<u32>,
    pub gaps_ns: Vec<u64>,
}

impl UdpPoints {
    /// The plan over these sizes and gaps; a value given twice runs once.
    pub fn new(sizes_bytes: &[u32], gaps_ns: &[u64]) -> UdpPoints {
        let mut plan = UdpPoints {
            sizes_bytes: Vec::new(),
            gaps_ns: Vec::new(),
        };
        for s in sizes_bytes {
            if !plan.sizes_bytes.contains(s) {
                plan.sizes_bytes.push(*s);
            }
        }
        for g in gaps_ns {
            if !plan.gaps_ns.contains(g) {
                plan.gaps_ns.push(*g);
            }
        }
        plan
    }

    /// How many runs the sweep makes.
    pub fn points(&self) -> usize {
        self.sizes_bytes.len() * self.gaps_ns.len()
    }
}

/// Runs every point of the plan through `run` (which validates and runs one spec), in order,
/// calling `progress` once before the first point and after each. A point that fails ends the
/// sweep with its error; one cut short ends it as partial.
pub fn sweep<E>(
    base: &UdpSpec,
    plan: &UdpPoints,
    mut run: impl FnMut(&UdpSpec) -> Result<TestResult, E>,
    mut progress: impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<Sweep, E> {
    let mut sweep = Sweep::new(
        SweepKind::Udp,
        vec![
            Parameter {
                name: "gap_us".into(),
                unit: "us".into(),
                values: plan.gaps_ns.iter().map(|g| *g as f64 / 1e3).collect(),
            },
            Parameter {
                name: "payload_bytes".into(),
                unit: "bytes".into(),
                values: plan.sizes_bytes.iter().map(|s| f64::from(*s)).collect(),
            },
        ],
    );
    progress(&sweep)?;
    for gap in &plan.gaps_ns {
        for size in &plan.sizes_bytes {
            let mut spec = base.clone();
            spec.payload_bytes = *size;
            spec.gap_ns = *gap;
            // One point is one line of the table, not a stream of interval lines.
            spec.timing.interval_seconds = 0.0;
            let result = run(&spec)?;
            let at = At::Udp {
                payload_bytes: *size,
                gap_us: *gap as f64 / 1e3,
            };
            if push(&mut sweep, SweepPoint::ran(at, String::new(), result), &mut progress)? {
                return Ok(sweep);
            }
        }
    }
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Summary;
    use crate::spec::TestSpec;
    use crate::sweep::stub_result;

    #[test]
    fn gaps_run_outer_and_sizes_inner_once_each() {
        let plan = UdpPoints::new(&[64, 1472, 64], &[0, 10_000]);
        assert_eq!(plan.points(), 4);
        let mut shown = Vec::new();
        let s = sweep(
            &UdpSpec::new(),
            &plan,
            |spec| Ok::<_, String>(stub_result(TestSpec::Udp(spec.clone()), Summary::default())),
            |s| {
                shown.push(s.points.len());
                Ok(())
            },
        )
        .expect("no point fails");
        let at: Vec<At> = s.points.iter().map(|p| p.at).collect();
        assert_eq!(
            at,
            [(64, 0.0), (1472, 0.0), (64, 10.0), (1472, 10.0)]
                .map(|(payload_bytes, gap_us)| At::Udp { payload_bytes, gap_us })
        );
        assert_eq!(shown, [0, 1, 2, 3, 4], "once before the first point, then after each");
        assert!(!s.partial);
        let spec = match &s.points[3].result.as_ref().expect("ran").options {
            TestSpec::Udp(u) => u.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (spec.payload_bytes, spec.gap_ns, spec.timing.interval_seconds),
            (1472, 10_000, 0.0)
        );
        // The document as printed: the paths readers use, and it reads back whole.
        let v = serde_json::to_value(&s).expect("serialises");
        assert_eq!(v["test"], "udp sweep");
        assert_eq!(v["parameters"][0]["name"], "gap_us");
        assert_eq!(v["points"][2]["payload_bytes"], 64);
        assert_eq!(v["points"][2]["gap_us"], 10.0);
        assert_eq!(v["points"][2]["result"]["test"], "udp");
        assert_eq!(serde_json::from_value::<Sweep>(v).expect("reads back"), s);
    }

    #[test]
    fn a_failed_point_ends_the_sweep_with_its_error() {
        let plan = UdpPoints::new(&[64], &[0, 1000]);
        let got = sweep(&UdpSpec::new(), &plan, |_| Err("refused".to_string()), |_| Ok(()));
        assert_eq!(got, Err("refused".to_string()));
    }
}
