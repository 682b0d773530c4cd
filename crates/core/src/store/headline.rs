//! The headline figures of a stored document, one function per document kind, so that lists and
//! comparisons read columns instead of parsing documents.
//!
//! In: a document as JSON (any kind: the store keeps kinds it does not know, with no figures).
//! Out: [`Figure`]s, the first the headline. The figures are read by JSON pointer from the layout
//! docs/results.md describes; a figure the document lacks is null, never 0. A new document
//! kind adds one arm to [`figures`].

use super::Figure;
use serde_json::Value;

/// The headline figures of `document`, whose `test` field is `kind`; the first is the one a
/// list shows. Empty for a kind this build does not know.
pub fn figures(kind: &str, document: &Value) -> Vec<Figure> {
    match kind {
        "tcp" => stream_figures(document, false),
        "udp" => stream_figures(document, true),
        "rr" => rr_figures(document),
        "http" => http_figures(document),
        "udp sweep" | "rr sweep" | "http sweep" => sweep_figures(document),
        _ => Vec::new(),
    }
}

fn num(v: &Value, pointer: &str) -> Option<f64> {
    v.pointer(pointer).and_then(Value::as_f64)
}

fn figure(name: &str, unit: &str, value: Option<f64>) -> Figure {
    Figure {
        name: name.to_string(),
        unit: unit.to_string(),
        value,
    }
}

/// `bits_per_second` as Mbit/s (10^6 bits).
fn mbit(v: Option<f64>) -> Option<f64> {
    v.map(|b| b / 1e6)
}

/// tcp and udp: the receivers' throughput first (the figure to trust), then the senders', the
/// CPU of each side's hosts, and for udp the loss.
fn stream_figures(d: &Value, udp: bool) -> Vec<Figure> {
    let mut out = vec![
        figure("received", "Mbit/s", mbit(num(d, "/summary/received/bits_per_second"))),
        figure("sent", "Mbit/s", mbit(num(d, "/summary/sent/bits_per_second"))),
        figure("sender CPU", "%", num(d, "/summary/sent/cpu/host_percent")),
        figure("receiver CPU", "%", num(d, "/summary/received/cpu/host_percent")),
    ];
    if udp {
        out.push(figure("loss", "%", num(d, "/summary/loss_percent")));
    }
    out
}

/// rr: transactions per second, the median and 99th percentile round trip, CPU per transaction.
fn rr_figures(d: &Value) -> Vec<Figure> {
    vec![
        figure("transactions", "/s", num(d, "/summary/transactions_per_second")),
        figure("p50 round trip", "us", num(d, "/summary/latency_us/p50")),
        figure("p99 round trip", "us", num(d, "/summary/latency_us/p99")),
        figure(
            "client CPU per transaction",
            "us",
            num(d, "/summary/cpu_us_per_transaction/client"),
        ),
        figure(
            "agent CPU per transaction",
            "us",
            num(d, "/summary/cpu_us_per_transaction/agents"),
        ),
    ]
}

/// http: responses per second, the bits read, the mean response time, the client's and the
/// server's CPU.
fn http_figures(d: &Value) -> Vec<Figure> {
    vec![
        figure("responses", "/s", num(d, "/summary/responses_per_second")),
        figure("in", "Mbit/s", mbit(num(d, "/summary/bits_per_second_in"))),
        figure("mean response time", "us", num(d, "/summary/response_time_us/mean")),
        figure("client CPU", "%", num(d, "/summary/sent/cpu/host_percent")),
        figure("server CPU", "%", num(d, "/summary/server/cpu/host_percent")),
    ]
}

/// Sweeps: the number of points first, then the derived figures where the kind has them (the rr
/// size fit, the http optimum).
fn sweep_figures(d: &Value) -> Vec<Figure> {
    let points = d.get("points").and_then(Value::as_array).map(|p| p.len() as f64);
    let mut out = vec![figure("points", "points", points)];
    match d.get("test").and_then(Value::as_str) {
        Some("rr sweep") => {
            out.push(figure("fit slope", "us/B", num(d, "/summary/fit/slope_us_per_byte")));
            out.push(figure("fit intercept", "us", num(d, "/summary/fit/intercept_us")));
        }
        Some("http sweep") => {
            out.push(figure("optimum users", "users", num(d, "/summary/optimum/users")));
            out.push(figure(
                "optimum responses",
                "/s",
                num(d, "/summary/optimum/responses_per_second"),
            ));
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tcp_headline_is_the_receivers_mbit_and_a_missing_figure_is_null() {
        let d = json!({"test": "tcp", "summary": {
            "received": {"bits_per_second": 941_500_000.0, "cpu": {"host_percent": 12.5}},
            "sent": {"bits_per_second": 942e6, "cpu": {"host_percent": null}}}});
        let f = figures("tcp", &d);
        assert_eq!(f[0], figure("received", "Mbit/s", Some(941.5)));
        assert_eq!(f[1].value, Some(942.0));
        assert_eq!(f[2], figure("sender CPU", "%", None), "null stays null");
        assert_eq!(f[3].value, Some(12.5));
        assert_eq!(f.len(), 4);
        assert_eq!(figures("udp", &d).len(), 5, "udp adds loss");
    }

    #[test]
    fn rr_http_and_sweeps_have_their_own_headline() {
        let rr = json!({"summary": {"transactions_per_second": 1234.5, "latency_us": {"p50": 40.0, "p99": 90.0}}});
        let f = figures("rr", &rr);
        assert_eq!(
            (f[0].value, f[1].value, f[2].value),
            (Some(1234.5), Some(40.0), Some(90.0))
        );
        let http = json!({"summary": {"responses_per_second": 800.0, "bits_per_second_in": 8e6}});
        let f = figures("http", &http);
        assert_eq!(
            (f[0].name.as_str(), f[0].value, f[1].value),
            ("responses", Some(800.0), Some(8.0))
        );
        let sweep = json!({"test": "rr sweep", "points": [{}, {}, {}],
            "summary": {"fit": {"slope_us_per_byte": 0.01, "intercept_us": 30.0}}});
        let f = figures("rr sweep", &sweep);
        assert_eq!(
            (f[0].value, f[1].value, f[2].value),
            (Some(3.0), Some(0.01), Some(30.0))
        );
        let http_sweep = json!({"test": "http sweep", "points": [{}], "summary": {"optimum": null}});
        let f = figures("http sweep", &http_sweep);
        assert_eq!((f[0].value, f[1].value), (Some(1.0), None));
        assert!(
            figures("tcp repeat", &http).is_empty(),
            "an unknown kind has no figures"
        );
    }
}
