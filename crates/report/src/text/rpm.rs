//! A responsiveness run (`linerate rpm`): its title, the RPM with its confidence, and a few
//! lines per stage (the draft's trimmed means, goodput, connections, how far it got).

use super::{grouped, row};
use linerate_wire::result::TestResult;
use linerate_wire::spec::RpmSpec;
use std::fmt::Write;

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| format!("{x:.2}"))
}

fn rpm(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |x| grouped(x, 0))
}

/// The run's first line: what was asked.
pub(super) fn title(r: &TestResult, spec: &RpmSpec) -> String {
    format!(
        "linerate {} rpm: {}, {}, interval {} s, MAD {}, at most {} s per stage\n",
        r.linerate,
        match spec.direction {
            linerate_wire::spec::RpmDirection::Both => "download and upload at once",
            linerate_wire::spec::RpmDirection::Down => "download",
            linerate_wire::spec::RpmDirection::Up => "upload",
            linerate_wire::spec::RpmDirection::Sequential => "download, then upload",
        },
        spec.config_url,
        spec.timing.interval_seconds,
        spec.mad,
        spec.timing.limit.seconds().unwrap_or_default(),
    )
}

/// The RESPONSIVENESS block.
pub(super) fn rpm_block(out: &mut String, r: &TestResult) {
    let Some(l) = &r.latency else { return };
    let Some(f) = &l.rpm else { return };
    out.push_str("RESPONSIVENESS (draft-ietf-ippm-responsiveness)\n");
    row(
        out,
        "RPM",
        format!("{} (confidence {})", rpm(f.rpm), f.confidence.name()),
    );
    row(
        out,
        "idle / loaded GET on a new connection",
        format!("{} / {} ms (medians)", ms(l.idle_ms), ms(l.loaded_ms)),
    );
    for s in &f.stages {
        let _ = writeln!(out, "  stage {}:", s.direction);
        row(
            out,
            "  RPM (foreign, self)",
            format!(
                "{} ({}, {}), confidence {}",
                rpm(s.rpm),
                rpm(s.foreign_rpm),
                rpm(s.self_rpm),
                s.confidence.name()
            ),
        );
        row(
            out,
            "  TCP / TLS / GET / self GET, ms",
            format!(
                "{} / {} / {} / {} ({} foreign, {} self probes)",
                ms(s.tcp_handshake_ms),
                ms(s.tls_handshake_ms),
                ms(s.http_get_ms),
                ms(s.self_ms),
                s.foreign_probes,
                s.self_probes
            ),
        );
        let mbps = |v: Option<f64>| v.map_or_else(|| "-".into(), |x| grouped(x, 1));
        row(
            out,
            "  goodput down / up, Mbit/s",
            format!(
                "{} / {} ({} / {} connections), goodput confidence {}",
                mbps(s.goodput_down_mbps),
                mbps(s.goodput_up_mbps),
                s.connections_down,
                s.connections_up,
                s.goodput_confidence.name()
            ),
        );
        row(
            out,
            "  intervals, seconds, stable",
            format!(
                "{}, {:.1} s, {}",
                s.intervals,
                s.seconds,
                if s.stable { "yes" } else { "no" }
            ),
        );
    }
    out.push_str("\nRPM = 60000 / round trip in ms: the mean of the foreign probes' (new connections) and the self probes' (on the load) responsiveness, from trimmed means over the last MAD intervals.\n");
}
