//! The TCP size sweep (the offload reports' curves): one run per transfer size (`-l`) in the
//! order given, one-way streams or a `--mix`, and per size the throughput, the CPU on both ends
//! and the efficiency (Mbit/s per CPU %), each taken from the point's own result.
//!
//! In: a base [`TcpSpec`], the sizes and a closure that runs one spec. Out: a [`Sweep`] of kind
//! [`SweepKind::Tcp`], whose `figures` hold one [`TcpSizeFigures`] per point that ran.

use super::{At, Parameter, Sweep, SweepKind, SweepPoint, push};
use crate::result::TestResult;
use crate::spec::TcpSpec;
use crate::units::ByteSize;

pub use linerate_wire::sweep::tcp::{TcpSizeFigures, TcpSweep};

/// Runs every size (each once, in the order given) through `run` (which validates and runs one
/// spec), calling `progress` once before the first point and after each. A point that fails
/// ends the sweep with its error; one cut short ends it as partial.
pub fn sweep<E>(
    base: &TcpSpec,
    sizes: &[ByteSize],
    mut run: impl FnMut(&TcpSpec) -> Result<TestResult, E>,
    mut progress: impl FnMut(&Sweep) -> Result<(), E>,
) -> Result<Sweep, E> {
    let mut once: Vec<ByteSize> = Vec::with_capacity(sizes.len());
    for s in sizes {
        if !once.contains(s) {
            once.push(*s);
        }
    }
    let mut sweep = Sweep::new(
        SweepKind::Tcp(TcpSweep {
            mix: base.mix,
            figures: Vec::new(),
        }),
        vec![Parameter {
            name: "buffer_bytes".into(),
            unit: "bytes".into(),
            values: once.iter().map(|s| s.0 as f64).collect(),
        }],
    );
    progress(&sweep)?;
    for size in once {
        let mut spec = base.clone();
        spec.buffer_bytes = size;
        // One point is one line of the table, not a stream of interval lines.
        spec.timing.interval_seconds = 0.0;
        let result = run(&spec)?;
        if let SweepKind::Tcp(t) = &mut sweep.kind {
            t.figures.push(TcpSizeFigures::of(&result, size.0));
        }
        let at = At::Tcp { buffer_bytes: size.0 };
        if push(&mut sweep, SweepPoint::ran(at, String::new(), result), &mut progress)? {
            return Ok(sweep);
        }
    }
    Ok(sweep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{CpuUsage, MixSummary, SideSummary, Summary};
    use crate::spec::TestSpec;
    use crate::sweep::{read_back_without_results, stub_result};

    fn side(counted_by: &str, bits_per_second: f64, cpu: f64) -> SideSummary {
        SideSummary {
            bits_per_second,
            counted_by: vec![counted_by.into()],
            cpu: CpuUsage {
                host_percent: Some(cpu),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn sizes_run_once_each_in_order_with_their_figures() {
        let mut base = TcpSpec::new();
        base.mix = Some("70:30".parse().expect("valid"));
        let sizes = [ByteSize(1024), ByteSize(65_536), ByteSize(1024)];
        let mut shown = Vec::new();
        let s = sweep(
            &base,
            &sizes,
            |spec| {
                let summary = Summary {
                    sent: side("client", 1e9, 50.0),
                    received: side("a", 2e9, 25.0),
                    mix: Some(MixSummary {
                        bits_per_second: spec.buffer_bytes.0 as f64 * 1e3,
                        transfers_per_second: 7.0,
                        ..Default::default()
                    }),
                    ..Default::default()
                };
                Ok::<_, String>(stub_result(TestSpec::Tcp(spec.clone()), summary))
            },
            |s| {
                shown.push(s.points.len());
                Ok(())
            },
        )
        .expect("no point fails");
        assert_eq!(shown, [0, 1, 2]);
        let at: Vec<At> = s.points.iter().map(|p| p.at).collect();
        assert_eq!(at, [At::Tcp { buffer_bytes: 1024 }, At::Tcp { buffer_bytes: 65_536 }]);
        let SweepKind::Tcp(t) = &s.kind else {
            panic!("{:?}", s.kind)
        };
        assert_eq!(t.mix, base.mix);
        let f = t.figures[1];
        assert_eq!(f.bits_per_second, 65_536e3, "a mix's throughput is its own");
        assert_eq!((f.client_cpu_percent, f.agent_cpu_percent), (Some(50.0), Some(25.0)));
        assert_eq!(f.client_mbit_per_second_per_cpu_percent, Some(65.536 / 50.0));
        assert_eq!(f.agent_mbit_per_second_per_cpu_percent, Some(65.536 / 25.0));
        assert_eq!(f.transfers_per_second, Some(7.0));
        let v = serde_json::to_value(&s).expect("serialises");
        assert_eq!(v["test"], "tcp sweep");
        assert_eq!(v["points"][1]["buffer_bytes"], 65_536);
        assert_eq!(v["figures"][0]["buffer_bytes"], 1024);
        assert_eq!(v["mix"]["read_percent"], 70);
        let back = read_back_without_results(v);
        assert_eq!(back.points[1].at, At::Tcp { buffer_bytes: 65_536 });
        assert_eq!(back.kind, s.kind);
    }

    #[test]
    fn one_way_figures_take_each_end_from_the_side_it_counted() {
        let r = stub_result(
            TestSpec::Tcp(TcpSpec::new()),
            Summary {
                sent: side("a", 1e9, 10.0),
                received: side("client", 1e9, 20.0),
                ..Default::default()
            },
        );
        let f = TcpSizeFigures::of(&r, 4096);
        assert_eq!((f.client_cpu_percent, f.agent_cpu_percent), (Some(20.0), Some(10.0)));
        assert_eq!(f.transfers_per_second, None);
        assert_eq!(f.bits_per_second, 1e9);
    }
}
