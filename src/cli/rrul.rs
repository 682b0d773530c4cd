//! `linerate rrul HOST[:PORT]`: flent's Realtime Response Under Load against one agent, its flags
//! and their translation into an [`Rrul`] plan (phases, streams, classes, probes).

use super::common::{HostArgs, OutputArgs, ProbeArgs};
use super::usage::{Usage, usage};
use linerate_core::spec::{Direction, Dscp, Limit, ProbeSpec, ProbeVia, TcpSpec, Timing, Validate};
use linerate_core::units::TimeSpan;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Phases, each --phase long, on one time axis: baseline (probes alone), download,\nupload, both, recovery.\n\nExamples:\n  linerate rrul 10.0.0.2\n  linerate rrul 10.0.0.2 --phase 30s -P 8 --probe rr --probe-rate 20"
)]
pub struct RrulArgs {
    #[command(flatten)]
    pub hosts: HostArgs,

    /// TCP streams per direction (default 4: one per class)
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 4)]
    pub streams: u32,

    /// The streams' DSCP classes, taken in turn (default flent's four)
    #[arg(
        long,
        value_name = "CLASSES",
        default_value = "BE,BK,CS5,EF",
        long_help = "The DSCP classes of the load's streams, taken in turn by each direction's streams\n\
(as --dscp), and of the probes: a probe session per class. Names (BE, BK, CS5, EF,\n\
AF41...) or numbers 0-63. Default: BE,BK,CS5,EF (flent's rrul). Example: --classes BE,EF"
    )]
    pub classes: String,

    /// How long each phase runs (default 10s)
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub phase: TimeSpan,

    /// Interval of the streams' samples (default 1s)
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1s")]
    pub interval: TimeSpan,

    #[command(flatten)]
    pub probe: ProbeArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub reach: super::ConnectArgs,
}

/// What one `rrul` run does: the load's spec (both directions, as the document's `options`), each
/// phase's length and the probes per class.
#[derive(Clone, Debug, PartialEq)]
pub struct Rrul {
    /// The load as one bidir spec: `streams` each way, `dscp` the classes; each load phase runs
    /// it one way or both, for `phase_seconds`.
    pub load: TcpSpec,
    pub phase_seconds: f64,
    /// The probes of every class (its `dscp` set per session).
    pub probe: ProbeSpec,
}

/// The most a phase may last: a run is five of them.
const MAX_PHASE_SECONDS: f64 = 3600.0;

impl RrulArgs {
    pub fn into_rrul(self) -> Result<Rrul, Usage> {
        let classes = Dscp::parse_list(&self.classes).map_err(|e| usage!("--classes: {e}"))?;
        let streams = super::common::stream_count(self.streams)?;
        let phase_seconds = self.phase.as_secs_f64();
        if !(0.1..=MAX_PHASE_SECONDS).contains(&phase_seconds) {
            return Err(usage!(
                "--phase must be between 0.1 s and {MAX_PHASE_SECONDS} s, not {phase_seconds} s"
            ));
        }
        if self.probe.probe_idle.is_some() || self.probe.probe_recovery.is_some() {
            return Err(usage!(
                "--probe-idle and --probe-recovery: rrul's baseline and recovery phases are --phase long"
            ));
        }
        let probe = match self.probe.spec("rrul", &[ProbeVia::Udp, ProbeVia::Rr], None)? {
            Some(p) => p,
            None => ProbeSpec::new(ProbeVia::Udp),
        };
        let mut timing = Timing::new(Limit::Seconds(phase_seconds));
        timing.interval_seconds = self.interval.as_secs_f64();
        let load = TcpSpec {
            streams,
            direction: Direction::Bidir,
            dscp: classes,
            timing,
            ..TcpSpec::new()
        };
        load.validate()?;
        probe.validate()?;
        Ok(Rrul {
            load,
            phase_seconds,
            probe,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn rrul(args: &[&str]) -> Result<Rrul, String> {
        let full = [&["linerate", "rrul", "h"][..], args].concat();
        let cli = Cli::try_parse_from(full).map_err(|e| e.to_string())?;
        let Command::Rrul(a) = cli.command else {
            panic!("not rrul")
        };
        a.into_rrul().map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_flents_four_classes_a_stream_each_way_and_udp_probes() {
        let r = rrul(&[]).expect("valid");
        assert_eq!(r.load.streams, 4);
        assert_eq!(r.load.dscp, Dscp::RRUL.to_vec());
        assert_eq!(r.load.direction, Direction::Bidir);
        assert_eq!((r.phase_seconds, r.load.timing.interval_seconds), (10.0, 1.0));
        assert_eq!(r.probe.via, ProbeVia::Udp);
        let r = rrul(&[
            "--phase",
            "2s",
            "-P",
            "8",
            "--classes",
            "ef,46",
            "--probe",
            "rr",
            "--probe-rate",
            "20",
        ])
        .expect("valid");
        assert_eq!(
            (r.load.streams, r.phase_seconds, r.probe.rate_per_second),
            (8, 2.0, 20.0)
        );
        assert_eq!(r.load.dscp, vec![Dscp::EF, Dscp::EF]);
        assert_eq!(r.probe.via, ProbeVia::Rr);
    }

    #[test]
    fn bad_input_is_named() {
        assert!(rrul(&["--classes", "XX"]).unwrap_err().contains("--classes"));
        assert!(rrul(&["-P", "0"]).unwrap_err().contains("-P"));
        assert!(rrul(&["--phase", "0s"]).unwrap_err().contains("--phase"));
        assert!(rrul(&["--probe", "http"]).unwrap_err().contains("http"));
        assert!(
            rrul(&["--probe", "udp", "--probe-idle", "1s"])
                .unwrap_err()
                .contains("--phase")
        );
    }
}
