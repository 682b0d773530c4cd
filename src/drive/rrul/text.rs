//! rrul's phase table, a function of its document alone: per phase and class, the throughput up
//! and down (Mbit/s, the receivers' count over the phase) and the probes' round trip (p50, p99,
//! ms) with the probes answered and lost in the phase. Printed before the run's own text.

use linerate_core::result::{LoadPhase, TestResult};

/// The table, or a line saying the document has no phases.
pub(super) fn phases(result: &TestResult) -> String {
    let Some(latency) = result.latency.as_ref().filter(|l| !l.phases.is_empty()) else {
        return "rrul: no phases measured\n".into();
    };
    let mut out = String::from(
        "\nphase      from..to (s)     class   up Mbit/s  down Mbit/s  rtt p50 ms  rtt p99 ms  answered  lost\n",
    );
    for (i, phase) in latency.phases.iter().enumerate() {
        let window = format!("{:.2}..{:.2}", phase.start_s, phase.end_s);
        for s in &latency.series {
            let class = s.name.rsplit(' ').next().unwrap_or_default();
            let figures = s.by_phase.get(i).and_then(Option::as_ref);
            let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
            out.push_str(&format!(
                "{:<10} {:<16} {:<7} {:>9}  {:>11}  {:>10}  {:>10}  {:>8}  {:>4}\n",
                phase.name,
                window,
                class,
                mbit(phase, class, "upload"),
                mbit(phase, class, "download"),
                ms(figures.map(|f| f.rtt_ms.p50)),
                ms(figures.map(|f| f.rtt_ms.p99)),
                figures.map_or(0, |f| f.answered),
                figures
                    .and_then(|f| f.lost)
                    .map_or_else(|| "-".to_string(), |l| l.to_string()),
            ));
        }
    }
    out
}

/// A class's throughput one way in a phase, Mbit/s; `-` where the phase carried none that way.
fn mbit(phase: &LoadPhase, class: &str, direction: &str) -> String {
    phase
        .load
        .iter()
        .find(|c| c.class == class && c.direction == direction)
        .and_then(|c| c.bits_per_second)
        .map_or_else(|| "-".to_string(), |b| format!("{:.1}", b / 1e6))
}
