//! A run with latency probes, built by hand: a 10 s tcp load of about 95 Mbit/s, a udp probe
//! series on a connection of its own (2 s idle at 20 ms, the queue filling to 220 ms under the
//! load, 2 s of recovery; one way up and down from a clock offset, one clock error) and a
//! TCP_INFO series on the load's connection. Its text block, its headline line, its two figures
//! (the model, the SVG parsed back, the CSV) and its page. The document is kept as a snapshot
//! (`latency_run.json`): the browser test in tests/it opens the page made from it.

mod common;

use linerate_core::result::{
    ClockOffset, Grade, IntervalRecord, IntervalSample, LatencyFigures, LatencyUnderLoad, PhaseLatency, ProbeOn,
    ProbeSample, ProbeSeries, StreamInterval, Summary, TestResult,
};
use linerate_core::spec::{TcpSpec, TestSpec};
use linerate_report::figures::{Subject, figures};
use linerate_report::plot::{Figure, Scale, Style, csv, svg};
use linerate_results::document::Document;

/// When the load ended, seconds on the probes' axis.
const LOAD_END_S: f64 = 10.0;

/// The nearest-rank percentile `p` of sorted `v`.
fn rank(v: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[i.clamp(1, v.len()) - 1]
}

fn figures_of(values: &[f64]) -> LatencyFigures {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    LatencyFigures {
        min: v[0],
        mean,
        p50: rank(&v, 50.0),
        p90: rank(&v, 90.0),
        p99: rank(&v, 99.0),
        p999: rank(&v, 99.9),
        max: v[v.len() - 1],
        stddev: (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt(),
    }
}

/// A phase of `samples` with `lost` unanswered.
fn phase(samples: &[ProbeSample], lost: Option<u64>) -> PhaseLatency {
    let rtt: Vec<f64> = samples.iter().map(|s| s.rtt_ms).collect();
    let up: Vec<f64> = samples.iter().filter_map(|s| s.up_ms).collect();
    let down: Vec<f64> = samples.iter().filter_map(|s| s.down_ms).collect();
    PhaseLatency {
        answered: samples.len() as u64,
        lost,
        rtt_ms: figures_of(&rtt),
        up_ms: (!up.is_empty()).then(|| figures_of(&up)),
        down_ms: (!down.is_empty()).then(|| figures_of(&down)),
        histogram: Vec::new(),
    }
}

/// The udp series: 10 probes/s from -2 s to 12 s. Idle 20.0 to 20.4 ms; under the load the
/// queue fills over the first 2 s to 200 ms more, every 25th probe lost; recovery 20.5 to
/// 20.8 ms. One way: up takes 10 ms and 90 % of the queue, down the rest; the 7th loaded probe
/// has a clock error (its one-way figures left out).
fn udp_series() -> ProbeSeries {
    let mut phases: [Vec<ProbeSample>; 3] = Default::default();
    let mut lost_loaded = 0;
    for k in 0..140 {
        let t_s = -2.0 + 0.05 + k as f64 * 0.1;
        let (p, rtt) = if t_s < 0.0 {
            (0, 20.0 + (k % 5) as f64 * 0.1)
        } else if t_s <= LOAD_END_S {
            let j = k - 20;
            if j % 25 == 24 {
                lost_loaded += 1;
                continue;
            }
            (1, 20.0 + (t_s * 100.0).min(200.0) + (j % 3) as f64 * 0.5)
        } else {
            (2, 20.5 + (k % 4) as f64 * 0.1)
        };
        let up = 10.0 + (rtt - 20.0) * 0.9;
        let clock_error = p == 1 && phases[1].len() == 6;
        phases[p].push(ProbeSample {
            t_s,
            rtt_ms: rtt,
            up_ms: (!clock_error).then_some(up),
            down_ms: (!clock_error).then_some(rtt - up),
        });
    }
    let answered = phases.iter().map(Vec::len).sum::<usize>() as u64;
    ProbeSeries {
        name: "udp round trip".into(),
        on: ProbeOn::Separate,
        sent: Some(answered + lost_loaded),
        answered,
        lost: Some(lost_loaded),
        clock_errors: 1,
        idle: Some(phase(&phases[0], Some(0))),
        loaded: Some(phase(&phases[1], Some(lost_loaded))),
        recovery: Some(phase(&phases[2], Some(0))),
        by_phase: Vec::new(),
        samples: phases.concat(),
    }
}

/// The load connection's smoothed RTT from TCP_INFO, read every 0.5 s under the load only:
/// rising with the queue to 215 ms.
fn tcp_info_series() -> ProbeSeries {
    let samples: Vec<ProbeSample> = (0..20)
        .map(|k| {
            let t_s = 0.25 + k as f64 * 0.5;
            ProbeSample {
                t_s,
                rtt_ms: 20.0 + (t_s * 90.0).min(195.0),
                up_ms: None,
                down_ms: None,
            }
        })
        .collect();
    ProbeSeries {
        name: "tcp_info rtt".into(),
        on: ProbeOn::Load,
        sent: None,
        answered: samples.len() as u64,
        lost: None,
        clock_errors: 0,
        idle: None,
        loaded: Some(phase(&samples, None)),
        recovery: None,
        by_phase: Vec::new(),
        samples,
    }
}

/// The receiver's Mbit/s in each of the 10 one-second intervals.
const MBIT: [f64; 10] = [80.0, 95.5, 95.1, 94.8, 95.3, 95.0, 94.9, 95.2, 95.4, 94.6];

fn latency() -> LatencyUnderLoad {
    let (udp, info) = (udp_series(), tcp_info_series());
    let (idle, loaded) = (udp.idle.as_ref().unwrap(), udp.loaded.as_ref().unwrap());
    let added = loaded.rtt_ms.p50 - idle.rtt_ms.p50;
    let added_up = loaded.up_ms.unwrap().p50 - idle.up_ms.unwrap().p50;
    let added_down = loaded.down_ms.unwrap().p50 - idle.down_ms.unwrap().p50;
    let mean = (added_up + added_down) / 2.0;
    LatencyUnderLoad {
        load_end_s: LOAD_END_S,
        idle_ms: Some(idle.rtt_ms.p50),
        loaded_ms: Some(loaded.rtt_ms.p50),
        added_ms: Some(added),
        added_up_ms: Some(added_up),
        added_down_ms: Some(added_down),
        clock: Some(ClockOffset {
            offset_ms: 3.2,
            uncertainty_ms: 0.15,
        }),
        rpm: None,
        phases: Vec::new(),
        grades: vec![Grade {
            scale: "bufferbloat".into(),
            grade: "D".into(),
            value: Some(mean),
            unit: "ms".into(),
            rule: format!(
                "added latency {mean:.0} ms (mean of up {added_up:.0} and down {added_down:.0}): 100 ms or more and under 400 ms is D"
            ),
        }],
        series: vec![udp, info],
    }
}

/// The whole run: a tcp test of 10 s, one stream, and its probes.
fn run() -> TestResult {
    let mut summary = Summary::default();
    let bytes: u64 = MBIT.iter().map(|m| (m * 1e6 / 8.0) as u64).sum();
    for side in [&mut summary.sent, &mut summary.received] {
        side.bytes = bytes;
        side.ops = 1000;
        side.streams = 1;
        side.seconds = MBIT.len() as f64;
        side.bits_per_second = bytes as f64 * 8.0 / MBIT.len() as f64;
    }
    let mut r = common::result(TestSpec::Tcp(TcpSpec::new()), summary);
    for (k, m) in MBIT.iter().enumerate() {
        r.intervals.push(IntervalRecord::Stream(StreamInterval {
            agent: "127.0.0.1:5301".into(),
            counted_by: "agent".into(),
            direction: "forward".into(),
            side: "received".into(),
            sample: IntervalSample {
                stream: 0,
                start_ns: k as u64 * 1_000_000_000,
                end_ns: (k as u64 + 1) * 1_000_000_000,
                bytes: (m * 1e6 / 8.0) as u64,
                ops: 100,
                tcp: None,
            },
            bits_per_second: m * 1e6,
        }));
    }
    r.latency = Some(latency());
    r
}

fn find<'a>(figs: &'a [Figure], id: &str) -> &'a Figure {
    figs.iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", figs.iter().map(|f| &f.id).collect::<Vec<_>>()))
}

fn run_figures(r: &TestResult) -> Vec<Figure> {
    figures(&Subject::Document(Document::Run(Box::new(r.clone()))))
}

/// The document as JSON, kept as the snapshot the browser test reads; it reads back whole.
#[test]
fn the_document_reads_back_and_is_the_browser_tests_fixture() {
    let r = run();
    let json = serde_json::to_string_pretty(&r).expect("serialize") + "\n";
    let back: TestResult = serde_json::from_str(&json).expect("read back");
    assert_eq!(back, r);
    common::check("latency_run.json", &json);
}

/// The block's rows, as the text report writes them.
fn block(text: &str) -> Vec<&str> {
    let start = text.find("LATENCY UNDER LOAD").expect("a latency block");
    text[start..].lines().take_while(|l| !l.is_empty()).collect()
}

/// The numbers of a row after its label.
fn numbers(row: &str) -> Vec<f64> {
    row.split_whitespace()
        .filter_map(|w| w.replace(',', "").parse().ok())
        .collect()
}

fn row<'a>(rows: &[&'a str], label: &str, nth: usize) -> &'a str {
    rows.iter()
        .filter(|r| r.trim_start().starts_with(label))
        .nth(nth)
        .copied()
        .unwrap_or_else(|| panic!("no row {label} #{nth} in {rows:#?}"))
}

#[test]
fn the_text_gives_each_series_its_phases_the_added_latency_and_the_grades() {
    let r = run();
    let text = linerate_report::text::render(&r);
    common::check("latency_tcp.txt", &text);
    let rows = block(&text);
    assert!(
        rows[1].contains(
            "series 1: udp round trip, on a connection of its own: sent 140, answered 136, lost 4, clock errors 1"
        ),
        "{}",
        rows[1]
    );
    // Idle: 20 probes of 20.0..20.4 ms, p50 20.2 (nearest rank), p90 20.4, max 20.4.
    assert_eq!(numbers(row(&rows, "idle", 0)), [20.0, 0.0, 20.2, 20.4, 20.4, 20.4]);
    // Loaded: 96 answered, 4 lost; the queue at 200 ms from 2 s on, so the median is 220.5 ms.
    let loaded = numbers(row(&rows, "loaded", 0));
    assert_eq!(loaded[..3], [96.0, 4.0, 220.5]);
    assert_eq!(loaded[5], 221.0, "max: 220 ms of queue and 1 ms of the wobble");
    assert_eq!(numbers(row(&rows, "recovery", 0))[..3], [20.0, 0.0, 20.6]);
    // Added: loaded less idle, percentile by percentile.
    assert_eq!(
        numbers(row(&rows, "added (loaded - idle)", 0)),
        [200.3, 200.6, 200.6, 200.6]
    );
    // One way under load: up 10 ms + 90 % of the queue's 200.5 ms; down the rest.
    let up = numbers(row(&rows, "one way up", 1));
    assert!((up[0] - (10.0 + 200.5 * 0.9)).abs() < 0.006, "{up:?}");
    assert!(rows[0].contains("the load ran until 10.0 s"), "{}", rows[0]);
    // The load's own series: no sends counted, loaded only.
    let s2 = row(&rows, "series 2", 0);
    assert!(
        s2.contains("tcp_info rtt, on the load's connections: sent n/a, answered 20, lost n/a"),
        "{s2}"
    );
    assert_eq!(
        numbers(row(&rows, "idle", 1)),
        [0.0],
        "no idle phase: 0 answered, the rest n/a"
    );
    // Up under load 190.45 ms (above) less idle's 10.18 (10 ms and 90 % of 0.2); down: the
    // fixture's medians of the rest.
    let head = row(&rows, "headline", 0);
    assert!(
        head.contains("idle 20.20 ms, loaded 220.50 ms, added 200.30 ms; added one way up 180.27 ms, down 20.03 ms"),
        "{head}"
    );
    assert!(row(&rows, "clock:", 0).contains("3.20 ms ahead of this host, +- 0.15 ms"));
    let grade = row(&rows, "grade", 0);
    assert!(
        grade.starts_with("  grade bufferbloat: D (100.1 ms); rule: added latency 100 ms"),
        "{grade}"
    );
}

#[test]
fn the_headline_line_gains_the_loaded_and_added_latency() {
    let mut r = run();
    let line = linerate_report::headline::run_line(&r);
    assert!(
        line.ends_with("; loaded latency 220.50 ms; added latency 200.30 ms"),
        "{line}"
    );
    r.latency = None;
    let line = linerate_report::headline::run_line(&r);
    assert!(!line.contains("latency"), "{line}");
    assert!(!linerate_report::text::render(&r).contains("LATENCY"));
}

#[test]
fn the_time_axis_figure_has_the_throughput_and_every_series_on_one_axis() {
    let r = run();
    let figs = run_figures(&r);
    let f = find(&figs, "fig-latency-time");
    assert_eq!(f.x.title(), "time since the load's start (s)");
    assert_eq!(f.y.title(), "throughput, received (Mbit/s)");
    assert_eq!(
        f.y2.as_ref().map(|a| a.title()).as_deref(),
        Some("probe round trip (ms)")
    );
    let names: Vec<(&str, bool)> = f.series.iter().map(|s| (s.name.as_str(), s.right)).collect();
    assert_eq!(
        names,
        [
            ("throughput", false),
            ("udp round trip (own connection)", true),
            ("tcp_info rtt (load connections)", true)
        ]
    );
    let mbit: Vec<f64> = f.series[0].points.iter().map(|p| p.y).collect();
    assert_eq!(mbit, MBIT);
    assert_eq!(f.series[0].points[0].x, 0.5, "an interval at its middle");
    let probes = &f.series[1].points;
    assert_eq!(probes.len(), 136);
    assert!(
        probes[0].x < 0.0 && probes[135].x > LOAD_END_S,
        "idle before 0, recovery after the load"
    );
    assert!(f.marks.contains(&linerate_report::plot::Mark::Band {
        from: 0.0,
        to: LOAD_END_S,
        label: "load".into()
    }));
    // The SVG parsed back: every series a group with its data path, the second axis drawn.
    let doc = svg_elements(&svg::render(f));
    let groups: Vec<&Element> = doc
        .iter()
        .filter(|e| e.class() == Some("series series-points") || e.class() == Some("series series-line"))
        .collect();
    let drawn: Vec<&str> = groups.iter().filter_map(|g| g.attr("data-name")).collect();
    assert_eq!(
        drawn,
        [
            "throughput",
            "udp round trip (own connection)",
            "tcp_info rtt (load connections)"
        ]
    );
    assert!(doc.iter().any(|e| e.class() == Some("axis y2-axis")), "no right axis");
    assert!(
        doc.iter().any(|e| e.class() == Some("mark band")),
        "the load not shaded"
    );
    let markers = doc
        .iter()
        .find(|e| e.class() == Some("markers") && e.inside.contains(&"fig-latency-time-s1".to_string()))
        .expect("the udp series' markers");
    assert_eq!(
        markers.attr("d").map(|d| d.matches('M').count()),
        Some(136),
        "a marker per answered probe"
    );
    // Its CSV: the probes' own numbers, the round trips in the right axis' column.
    let table = csv::render(f);
    assert!(
        table.starts_with(
            "series,time since the load's start (s),\"throughput, received (Mbit/s)\",probe round trip (ms)\n"
        ),
        "{}",
        &table[..200]
    );
    assert!(
        table.contains("\nudp round trip (own connection),-1.95,,20\n"),
        "the first probe"
    );
    assert!(table.contains("\nthroughput,0.5,80,\n"));
}

#[test]
fn the_cdf_has_each_phase_of_each_series() {
    let r = run();
    let figs = run_figures(&r);
    let f = find(&figs, "fig-latency-cdf");
    assert_eq!(f.x.scale, Scale::Log, "20 to 221 ms spans a decade");
    assert_eq!((f.y.min, f.y.max), (Some(0.0), Some(100.0)));
    let names: Vec<&str> = f.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "udp round trip (own connection), idle",
            "udp round trip (own connection), loaded",
            "udp round trip (own connection), recovery",
            "tcp_info rtt (load connections), loaded"
        ]
    );
    assert!(f.series.iter().all(|s| s.style == Style::Line));
    let idle = &f.series[0].points;
    assert_eq!((idle.len(), idle[0].x, idle[0].y), (20, 20.0, 5.0));
    assert_eq!(idle[19].y, 100.0);
    let loaded = &f.series[1].points;
    assert!(loaded.windows(2).all(|w| w[0].x <= w[1].x && w[0].y < w[1].y), "rises");
    // The median of the curve is the table's: half the loaded probes at or below 220.5 ms.
    let half = loaded.iter().find(|p| p.y >= 50.0).expect("a middle");
    assert_eq!(half.x, 220.5);
    let doc = svg_elements(&svg::render(f));
    let drawn = doc.iter().filter(|e| e.class() == Some("series series-line")).count();
    assert_eq!(drawn, 4);
    assert!(
        doc.iter()
            .any(|e| e.name == "text" && e.class() == Some("axis-title") && e.text == "probe round trip (ms)")
    );
}

#[test]
fn the_page_has_both_figures_the_tables_and_the_summary_line() {
    let r = run();
    let subject = Subject::Document(Document::Run(Box::new(r.clone())));
    let section = linerate_report::html::section(&subject, "latency.json", 1, 1);
    let page = linerate_report::html::page("t", &[section]);
    for id in [
        "fig-latency-time",
        "fig-latency-cdf",
        "tab-latency",
        "tab-latency-grades",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(page.contains(
        "latency under load (median round trip): idle 20.20 ms, loaded 220.50 ms, added 200.30 ms; bufferbloat D"
    ));
    // A run without probes: none of it.
    let mut bare = r;
    bare.latency = None;
    let subject = Subject::Document(Document::Run(Box::new(bare)));
    let page = linerate_report::html::page("t", &[linerate_report::html::section(&subject, "x.json", 1, 1)]);
    assert!(!page.contains("latency"), "a run without probes mentions latency");
}

/// One element of an SVG as the parser below reads it: its name, attributes, the text directly
/// in it, and the ids of the elements it is inside.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    inside: Vec<String>,
}

impl Element {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
    }

    fn class(&self) -> Option<&str> {
        self.attr("class")
    }
}

/// The elements of an SVG the renderer wrote, in document order, read by a small XML parser
/// (elements, attributes in double quotes, text, the five entities) that fails the test on a
/// tag closed out of order: the output must be well-formed, not merely contain the words.
fn svg_elements(svg: &str) -> Vec<Element> {
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
    };
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut rest = svg;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        if let Some((_, i)) = open.last() {
            out[*i].text.push_str(&unescape(text));
        }
        let gt = rest[lt..].find('>').expect("a tag ends") + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let (was, _) = open.pop().expect("a close matches an open tag");
            assert_eq!(was, name, "</{name}> closes <{was}>");
            continue;
        }
        let empty = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs_text) = tag.split_once(' ').unwrap_or((tag, ""));
        let mut attrs = Vec::new();
        while let Some(eq) = attrs_text.find("=\"") {
            let key = attrs_text[..eq].trim().to_string();
            let value_end = attrs_text[eq + 2..].find('"').expect("an attribute ends") + eq + 2;
            attrs.push((key, unescape(&attrs_text[eq + 2..value_end])));
            attrs_text = &attrs_text[value_end + 1..];
        }
        assert!(attrs_text.trim().is_empty(), "stray text in <{name}>: {attrs_text}");
        let inside = open
            .iter()
            .filter_map(|(_, i)| out[*i].attr("id").map(str::to_string))
            .collect();
        out.push(Element {
            name: name.to_string(),
            attrs,
            text: String::new(),
            inside,
        });
        if !empty {
            open.push((name.to_string(), out.len() - 1));
        }
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
    out
}

#[test]
fn without_the_loads_intervals_the_round_trips_take_the_only_axis_and_without_samples_no_figure() {
    let mut r = run();
    r.intervals.clear();
    let figs = run_figures(&r);
    let f = find(&figs, "fig-latency-time");
    assert!(
        f.y2.is_none() && f.series.iter().all(|s| !s.right),
        "{:?} {:?}",
        f.y2,
        f.series
            .iter()
            .map(|s| (&s.name, s.right, s.points.len()))
            .collect::<Vec<_>>()
    );
    assert_eq!(f.y.title(), "probe round trip (ms)");
    assert_eq!(f.series.len(), 2);
    for s in &mut r.latency.as_mut().expect("probes").series {
        s.samples.clear();
    }
    let figs = run_figures(&r);
    assert!(
        !figs.iter().any(|f| f.id.starts_with("fig-latency")),
        "no answered probe, nothing to draw"
    );
}

/// A `--bidir` load: its throughput a series per direction, each the sum of its streams, as the
/// run's own timeline sums them.
#[test]
fn a_bidir_load_has_a_throughput_series_per_direction() {
    let mut r = run();
    let mut extra = Vec::new();
    for i in &r.intervals {
        if let IntervalRecord::Stream(s) = i {
            for (stream, direction, share) in [(1, "forward", 0.5), (2, "reverse", 0.25)] {
                let mut t = s.clone();
                t.sample.stream = stream;
                t.direction = direction.into();
                t.bits_per_second *= share;
                extra.push(IntervalRecord::Stream(t));
            }
        }
    }
    r.intervals.extend(extra);
    let figs = run_figures(&r);
    let f = find(&figs, "fig-latency-time");
    let load: Vec<(&str, Vec<f64>)> = f
        .series
        .iter()
        .filter(|s| !s.right)
        .map(|s| (s.name.as_str(), s.points.iter().map(|p| p.y).collect()))
        .collect();
    let forward: Vec<f64> = MBIT.iter().map(|m| m * 1.5).collect();
    let reverse: Vec<f64> = MBIT.iter().map(|m| m * 0.25).collect();
    assert_eq!(
        load,
        [("throughput forward", forward.clone()), ("throughput reverse", reverse)]
    );
    let timeline = find(&figs, "fig-timeline");
    assert_eq!(timeline.series[0].name, "total forward");
    let totals: Vec<f64> = timeline.series[0].points.iter().map(|p| p.y).collect();
    assert_eq!(totals, forward, "the timeline's totals are the same sums");
}
