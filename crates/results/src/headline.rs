//! The headline figures of a run: the few numbers a reader quotes from it, per test kind, each
//! named with its unit and knowing which way is better. One list serves every consumer: the
//! aggregate of a repeated test (`crate::repeat`), the results store's columns, a comparison's
//! verdicts.
//!
//! In: a [`TestResult`]. Out: [`Figure`]s in the kind's order, the first being the primary
//! figure (the one `--best` ranks runs by and `--repeat auto` converges on). Which figures a
//! run has depends on its spec (a bidir TCP run adds the two directions, a run with probes its
//! latency under load, after the kind's own), so runs of one test line up; a figure the run did
//! not measure has no value.

use linerate_wire::result::{Better, LatencyUnderLoad, Matrix, SideSummary, TestResult};
use linerate_wire::spec::{Direction, TestSpec};

/// One headline figure of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure {
    /// Its name in documents and columns, its unit in it: `received_mbit_per_second`.
    pub name: &'static str,
    /// What it is, in words, for text: `receiver throughput`.
    pub label: &'static str,
    /// Its unit as text shows it: `Mbit/s` (10^6 bits per second).
    pub unit: &'static str,
    pub better: Better,
    /// None when the run did not measure it (no CPU figure on that host, no latency sample).
    pub value: Option<f64>,
}

const MBIT: f64 = 1e6;

fn up(name: &'static str, label: &'static str, unit: &'static str, value: Option<f64>) -> Figure {
    Figure {
        name,
        label,
        unit,
        better: Better::Up,
        value,
    }
}

fn down(name: &'static str, label: &'static str, unit: &'static str, value: Option<f64>) -> Figure {
    Figure {
        better: Better::Down,
        ..up(name, label, unit, value)
    }
}

/// Throughput, Mbit/s; None over an empty window.
fn mbit(side: &SideSummary) -> Option<f64> {
    (side.seconds > 0.0).then_some(side.bits_per_second / MBIT)
}

/// Mbit/s per percent of the host's CPU (100 % = every CPU busy): what a throughput cost.
fn per_cpu(side: &SideSummary) -> Option<f64> {
    let cpu = side.cpu.host_percent.filter(|c| *c > 0.0)?;
    Some(mbit(side)? / cpu)
}

/// Throughput each side and direction, CPU each end and what the throughput cost (TCP, UDP).
fn stream_figures(r: &TestResult, out: &mut Vec<Figure>) {
    let s = &r.summary;
    out.push(up(
        "received_mbit_per_second",
        "receiver throughput",
        "Mbit/s",
        mbit(&s.received),
    ));
    out.push(up("sent_mbit_per_second", "sender throughput", "Mbit/s", mbit(&s.sent)));
    if r.options.direction() == Direction::Bidir {
        let dir = |name: &str| s.directions.as_ref().and_then(|d| d.get(name));
        out.push(up(
            "forward_received_mbit_per_second",
            "receiver throughput, client to agents",
            "Mbit/s",
            dir("forward").and_then(|d| mbit(&d.received)),
        ));
        out.push(up(
            "reverse_received_mbit_per_second",
            "receiver throughput, agents to client",
            "Mbit/s",
            dir("reverse").and_then(|d| mbit(&d.received)),
        ));
    }
    out.push(down(
        "sender_cpu_percent",
        "sender's host CPU",
        "% of host",
        s.sent.cpu.host_percent,
    ));
    out.push(down(
        "receiver_cpu_percent",
        "receiver's host CPU",
        "% of host",
        s.received.cpu.host_percent,
    ));
    out.push(up(
        "sender_mbit_per_cpu_percent",
        "sender efficiency",
        "Mbit/s per % of host",
        per_cpu(&s.sent),
    ));
    out.push(up(
        "receiver_mbit_per_cpu_percent",
        "receiver efficiency",
        "Mbit/s per % of host",
        per_cpu(&s.received),
    ));
}

/// Whether a run's probes measured latency under its load: its spec asks for probes, or it
/// has latency figures (a kind whose test is the probes).
fn probed(r: &TestResult) -> bool {
    r.options.probe().is_some() || r.latency.is_some()
}

/// The responsiveness test's RPM figure, as its grade on the draft's scale holds it (scale
/// `rpm`; a probe run's `rpm from loaded round trip` is its loaded latency again, not a figure of
/// its own).
fn rpm(l: &LatencyUnderLoad) -> Option<f64> {
    l.grades.iter().find(|g| g.scale == "rpm").and_then(|g| g.value)
}

/// The latency under load of a probed run, after the kind's own figures: the loaded and idle
/// median round trips of the headline series, their difference, and the RPM figure where the
/// run has one.
fn latency_figures(r: &TestResult, out: &mut Vec<Figure>) {
    if !probed(r) {
        return;
    }
    let l = r.latency.as_ref();
    out.push(down(
        "loaded_latency_p50_ms",
        "loaded latency p50",
        "ms",
        l.and_then(|l| l.loaded_ms),
    ));
    out.push(down(
        "added_latency_ms",
        "added latency (loaded p50 less idle p50)",
        "ms",
        l.and_then(|l| l.added_ms),
    ));
    out.push(down(
        "idle_latency_p50_ms",
        "idle latency p50",
        "ms",
        l.and_then(|l| l.idle_ms),
    ));
    if let Some(rpm) = l.and_then(rpm) {
        out.push(up("rpm", "responsiveness", "RPM", Some(rpm)));
    }
}

/// A matrix's median cell: the median of the measured cells' values, in the matrix's
/// figure's unit (the mean of the middle two for an even count); None when no cell measured.
pub fn median_cell(m: &Matrix) -> Option<f64> {
    crate::stats::median(&m.values())
}

/// The headline figures of `r`, the primary one first.
pub fn headline(r: &TestResult) -> Vec<Figure> {
    let s = &r.summary;
    let mut out = Vec::new();
    match &r.options {
        TestSpec::Tcp(_) => {
            stream_figures(r, &mut out);
            out.push(down(
                "retransmits",
                "TCP retransmits",
                "segments",
                s.sent.tcp.as_ref().map(|t| t.retransmits as f64),
            ));
        }
        TestSpec::Udp(_) => {
            stream_figures(r, &mut out);
            let udp = s.udp.as_ref();
            out.push(down(
                "datagrams_lost",
                "datagrams lost",
                "datagrams",
                udp.map(|u| u.lost as f64),
            ));
            out.push(down("loss_percent", "loss", "%", udp.map(|u| u.loss_percent)));
            // Jitter needs two arrivals on a stream: nothing received, nothing to say.
            out.push(down(
                "jitter_us",
                "jitter",
                "us",
                udp.filter(|u| u.datagrams_received > 1).map(|u| u.jitter_us),
            ));
        }
        TestSpec::Rr(_) => {
            let rr = s.rr.as_ref();
            out.push(up(
                "transactions_per_second",
                "transactions",
                "transactions/s",
                rr.map(|x| x.transactions_per_second),
            ));
            let lat = rr.and_then(|x| x.latency_us);
            out.push(down("latency_p50_us", "latency p50", "us", lat.map(|l| l.p50)));
            out.push(down("latency_p90_us", "latency p90", "us", lat.map(|l| l.p90)));
            out.push(down("latency_p99_us", "latency p99", "us", lat.map(|l| l.p99)));
            out.push(down("latency_p999_us", "latency p99.9", "us", lat.map(|l| l.p999)));
            out.push(down(
                "client_cpu_us_per_transaction",
                "client CPU per transaction",
                "us of one core",
                rr.and_then(|x| x.cpu_us_per_transaction).and_then(|c| c.client),
            ));
        }
        TestSpec::Http(_) => {
            let h = s.http.as_ref();
            let rt = h.and_then(|h| h.response_time_us);
            // First: the headline. Failed responses are not throughput.
            out.push(up(
                "successful_responses_per_second",
                "successful (2xx) responses",
                "responses/s",
                h.and_then(|h| {
                    h.successful_responses_per_second.or_else(|| {
                        (h.steady_seconds > 0.0).then(|| h.successful_responses() as f64 / h.steady_seconds)
                    })
                }),
            ));
            out.push(up(
                "responses_per_second",
                "all responses (any status)",
                "responses/s",
                h.map(|h| h.responses_per_second),
            ));
            out.push(up(
                "mbit_per_second_in",
                "throughput read",
                "Mbit/s",
                h.map(|h| h.bits_per_second_in / MBIT),
            ));
            out.push(down(
                "response_time_p50_us",
                "response time p50",
                "us",
                rt.map(|l| l.p50),
            ));
            out.push(down(
                "response_time_p99_us",
                "response time p99",
                "us",
                rt.map(|l| l.p99),
            ));
            out.push(up(
                "connections_per_second",
                "connections established",
                "connections/s",
                h.map(|h| h.connections.per_second.successful),
            ));
            out.push(down("errors", "failed", "requests", h.map(|h| h.errors.total as f64)));
        }
        TestSpec::Rpm(_) => {
            let rpm = r.latency.as_ref().and_then(|l| l.rpm.as_ref());
            // First: the responsiveness. Then the load each way and the loaded latency.
            out.push(up("rpm", "responsiveness", "RPM", rpm.and_then(|f| f.rpm)));
            out.push(up(
                "mbit_per_second_down",
                "download goodput",
                "Mbit/s",
                (s.received.seconds > 0.0).then(|| s.received.bits_per_second / MBIT),
            ));
            out.push(up(
                "mbit_per_second_up",
                "upload goodput",
                "Mbit/s",
                (s.sent.seconds > 0.0).then(|| s.sent.bits_per_second / MBIT),
            ));
            let latency = r.latency.as_ref();
            out.push(down("idle_ms", "idle latency", "ms", latency.and_then(|l| l.idle_ms)));
            out.push(down(
                "loaded_ms",
                "loaded latency",
                "ms",
                latency.and_then(|l| l.loaded_ms),
            ));
        }
    }
    latency_figures(r, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_core::sweep::stub_result;
    use linerate_wire::result::{CpuUsage, DirectionSummary, LatencyFigures, RrSummary, Summary, UdpSummary};
    use linerate_wire::spec::{RrSpec, TcpSpec, UdpSpec};

    fn side(mbit_per_second: f64, cpu: Option<f64>) -> SideSummary {
        SideSummary {
            seconds: 2.0,
            bits_per_second: mbit_per_second * 1e6,
            cpu: CpuUsage {
                host_percent: cpu,
                ..CpuUsage::default()
            },
            ..SideSummary::default()
        }
    }

    #[test]
    fn tcp_figures_read_each_side_and_name_their_units() {
        let summary = Summary {
            sent: side(950.0, Some(20.0)),
            received: side(940.0, None),
            ..Summary::default()
        };
        let f = headline(&stub_result(TestSpec::Tcp(TcpSpec::new()), summary));
        let names: Vec<&str> = f.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "received_mbit_per_second",
                "sent_mbit_per_second",
                "sender_cpu_percent",
                "receiver_cpu_percent",
                "sender_mbit_per_cpu_percent",
                "receiver_mbit_per_cpu_percent",
                "retransmits"
            ]
        );
        assert_eq!(f[0].value, Some(940.0));
        assert_eq!((f[0].better, f[2].better), (Better::Up, Better::Down));
        assert_eq!(f[2].value, Some(20.0));
        assert_eq!(f[3].value, None, "unknown CPU stays unknown");
        assert_eq!(f[4].value, Some(47.5));
        assert_eq!(f[5].value, None);
        assert_eq!(f[6].value, None, "no TCP_INFO, no retransmit count");
        assert!(f.iter().all(|f| !f.unit.is_empty()));
    }

    #[test]
    fn bidir_adds_each_direction() {
        let mut spec = TcpSpec::new();
        spec.direction = Direction::Bidir;
        let dirs = [("forward", 400.0), ("reverse", 300.0)]
            .map(|(name, m)| {
                (
                    name.to_string(),
                    DirectionSummary {
                        sent: side(m, None),
                        received: side(m, None),
                    },
                )
            })
            .into_iter()
            .collect();
        let summary = Summary {
            received: side(700.0, None),
            directions: Some(dirs),
            ..Summary::default()
        };
        let f = headline(&stub_result(TestSpec::Tcp(spec), summary));
        let get = |n: &str| f.iter().find(|f| f.name == n).and_then(|f| f.value);
        assert_eq!(get("forward_received_mbit_per_second"), Some(400.0));
        assert_eq!(get("reverse_received_mbit_per_second"), Some(300.0));
        assert_eq!(f[0].value, Some(700.0));
    }

    #[test]
    fn udp_adds_loss_and_rr_leads_with_transactions() {
        let summary = Summary {
            received: side(90.0, None),
            udp: Some(UdpSummary {
                lost: 12,
                loss_percent: 0.5,
                ..UdpSummary::default()
            }),
            ..Summary::default()
        };
        let f = headline(&stub_result(TestSpec::Udp(UdpSpec::new()), summary));
        let lost = f.iter().find(|f| f.name == "datagrams_lost").expect("udp has loss");
        assert_eq!((lost.value, lost.better), (Some(12.0), Better::Down));
        let loss = f.iter().find(|f| f.name == "loss_percent").map(|f| f.value);
        assert_eq!(loss, Some(Some(0.5)));
        let jitter = f.iter().find(|f| f.name == "jitter_us").map(|f| f.value);
        assert_eq!(jitter, Some(None), "no arrivals, no jitter");

        let rr = Summary {
            rr: Some(RrSummary {
                transactions_per_second: 25_000.0,
                latency_us: Some(LatencyFigures {
                    p50: 38.0,
                    p999: 90.0,
                    ..LatencyFigures::default()
                }),
                ..RrSummary::default()
            }),
            ..Summary::default()
        };
        let f = headline(&stub_result(TestSpec::Rr(RrSpec::new()), rr));
        assert_eq!((f[0].name, f[0].value), ("transactions_per_second", Some(25_000.0)));
        assert_eq!(
            (f[1].name, f[1].value, f[1].better),
            ("latency_p50_us", Some(38.0), Better::Down)
        );
        assert_eq!((f[4].name, f[4].value), ("latency_p999_us", Some(90.0)));
        assert_eq!(f[5].value, None);
    }

    #[test]
    fn a_probed_run_adds_its_latency_after_the_kinds_figures() {
        use linerate_wire::result::{Grade, LatencyUnderLoad};
        use linerate_wire::spec::{ProbeSpec, ProbeVia};
        let mut spec = TcpSpec::new();
        spec.probe = Some(ProbeSpec::new(ProbeVia::Rr));
        let summary = Summary {
            received: side(94.0, None),
            ..Summary::default()
        };
        let mut r = stub_result(TestSpec::Tcp(spec), summary);
        // Probes asked for, nothing answered: the figures are there, unknown.
        let f = headline(&r);
        let tail: Vec<(&str, Option<f64>)> = f[7..].iter().map(|f| (f.name, f.value)).collect();
        assert_eq!(
            tail,
            [
                ("loaded_latency_p50_ms", None),
                ("added_latency_ms", None),
                ("idle_latency_p50_ms", None)
            ]
        );
        r.latency = Some(LatencyUnderLoad {
            idle_ms: Some(20.4),
            loaded_ms: Some(221.0),
            added_ms: Some(200.6),
            grades: vec![Grade {
                scale: "rpm".into(),
                value: Some(271.5),
                ..Grade::default()
            }],
            ..LatencyUnderLoad::default()
        });
        let f = headline(&r);
        assert_eq!(f[0].name, "received_mbit_per_second", "the primary figure stays first");
        let get = |n: &str| f.iter().find(|f| f.name == n).map(|f| (f.value, f.better, f.unit));
        assert_eq!(get("loaded_latency_p50_ms"), Some((Some(221.0), Better::Down, "ms")));
        assert_eq!(get("added_latency_ms"), Some((Some(200.6), Better::Down, "ms")));
        assert_eq!(get("idle_latency_p50_ms"), Some((Some(20.4), Better::Down, "ms")));
        assert_eq!(get("rpm"), Some((Some(271.5), Better::Up, "RPM")));
        // No probes: no latency figures at all.
        let plain = headline(&stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default()));
        assert!(plain.iter().all(|f| !f.name.contains("latency")), "{plain:?}");
    }

    #[test]
    fn an_empty_window_has_no_throughput() {
        let f = headline(&stub_result(TestSpec::Tcp(TcpSpec::new()), Summary::default()));
        assert_eq!(f[0].value, None);
    }
}
