//! Every kind of page laid out as a browser lays it out. Each page (a tcp, udp, rr and
//! http run, a sweep, a repeated run, a campaign, an A..B comparison, all made by real runs on
//! loopback) is opened in headless Chromium at 1280 x 900 with a few lines of script added to a
//! copy of it, which measure every text element of every figure with the browser's own boxes
//! (`getBoundingClientRect`): none may reach past its SVG, no two of one figure may overlap, and
//! the first screen (the top 900 px) must hold a whole plot and the summary (on a comparison the
//! verdict summary; a sweep has none). The campaign's and the comparison's first screens are
//! photographed (`--screenshot`); with `LINERATE_SCREENSHOTS=DIR` every page's is kept there
//! (docs/img/ holds the campaign's and the comparison's).

use super::store::{campaign, report as store_report, setup, two_repeated_runs};
use super::{AGENT, CHROMIUM, HTTP, HTTP_RUN, chromium, document, report};
use crate::util::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The first screen: a laptop's browser window.
const SCREEN: (u32, u32) = (1280, 900);

/// Measures the page after its own layout and writes what it found, as JSON, into a `<pre>` the
/// dumped DOM carries: per visible figure its box and each non-empty text element's box, and the
/// summary's box, all in page coordinates (px).
pub(super) const MEASURE: &str = r#"<script>(function(){
function box(e){var b=e.getBoundingClientRect();return {l:b.left+scrollX,r:b.right+scrollX,t:b.top+scrollY,b:b.bottom+scrollY};}
var out={figures:[],summary:null};
document.querySelectorAll('svg.figure').forEach(function(svg){
  var s=box(svg); if(s.r-s.l<1)return;
  var texts=[];
  svg.querySelectorAll('text').forEach(function(t){
    if(!t.textContent.trim())return; var b=box(t); if(b.r-b.l<0.5)return;
    b.text=t.textContent; texts.push(b);
  });
  out.figures.push({id:svg.id,box:s,texts:texts});
});
var sum=document.getElementById('summary'); if(sum)out.summary=box(sum);
var pre=document.createElement('pre');pre.id='layout-measured';pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);
})();</script>"#;

/// A copy of `page` with `script` (such as [`MEASURE`]) run at its end. The page's
/// Content-Security-Policy lets only its own script run, so the copy leaves the policy
/// out; nothing else changes.
fn measurable(page: &Path, script: &str) -> PathBuf {
    let html = std::fs::read_to_string(page).expect("read the page");
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("a CSP");
    let end = start + html[start..].find('>').expect("the meta's end") + 1;
    let mut copy = format!("{}{}", &html[..start], &html[end..]);
    let body = copy.rfind("</body>").expect("</body>");
    copy.insert_str(body, script);
    let out = page.with_extension("measure.html");
    std::fs::write(&out, copy).expect("write the copy");
    out
}

/// What the browser measured on `page`.
fn measure(dir: &Path, page: &Path) -> Value {
    measure_with(dir, page, MEASURE, &["layout-measured"]).remove(0)
}

/// What `script` (one or more measuring scripts) wrote on `page`: the JSON in each `<pre>` named
/// in `pres`, in that order.
pub(super) fn measure_with(dir: &Path, page: &Path, script: &str, pres: &[&str]) -> Vec<Value> {
    let url = format!("file://{}", measurable(page, script).display());
    let size = format!("--window-size={},{}", SCREEN.0, SCREEN.1);
    let (dom, log) = chromium(&dir.join("profile-layout"), &url, &["--dump-dom", &size]);
    pres.iter().map(|pre| measured(&dom, pre, &log)).collect()
}

fn measured(dom: &str, pre: &str, log: &str) -> Value {
    let open = format!("<pre id=\"{pre}\">");
    let start = dom
        .find(&open)
        .unwrap_or_else(|| panic!("the measuring script did not run: {log}"));
    let rest = &dom[start + open.len()..];
    let json = &rest[..rest.find("</pre>").expect("</pre>")];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

#[derive(Clone, Copy, Debug)]
struct Box2 {
    l: f64,
    r: f64,
    t: f64,
    b: f64,
}

fn box_of(v: &Value) -> Box2 {
    let g = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Box2 {
        l: g("l"),
        r: g("r"),
        t: g("t"),
        b: g("b"),
    }
}

/// Overflow and overlap below half a pixel is rounding, not layout.
const SLACK: f64 = 0.5;

/// Everything wrong with the layout of one page: text past its SVG, texts of one figure over
/// each other, no whole plot (or no summary, where `summary` asks for one) on the first screen.
pub(super) fn faults(name: &str, m: &Value, summary: bool) -> Vec<String> {
    let mut out = Vec::new();
    let figures = m["figures"].as_array().cloned().unwrap_or_default();
    for fig in &figures {
        let id = fig["id"].as_str().unwrap_or("?");
        let svg = box_of(&fig["box"]);
        let texts: Vec<(String, Box2)> = fig["texts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| (t["text"].as_str().unwrap_or("").to_string(), box_of(t)))
            .collect();
        for (text, b) in &texts {
            if b.l < svg.l - SLACK || b.r > svg.r + SLACK || b.t < svg.t - SLACK || b.b > svg.b + SLACK {
                out.push(format!("{name} {id}: {text:?} {b:?} reaches past its SVG {svg:?}"));
            }
        }
        for (i, (ta, a)) in texts.iter().enumerate() {
            for (tb, b) in &texts[i + 1..] {
                let w = a.r.min(b.r) - a.l.max(b.l);
                let h = a.b.min(b.b) - a.t.max(b.t);
                if w > SLACK && h > SLACK {
                    out.push(format!("{name} {id}: {ta:?} and {tb:?} overlap ({w:.1} x {h:.1} px)"));
                }
            }
        }
    }
    let screen = f64::from(SCREEN.1);
    match figures.first() {
        None => out.push(format!("{name}: no figure")),
        Some(f) => {
            let b = box_of(&f["box"]);
            if b.b > screen {
                out.push(format!(
                    "{name}: the first figure {} ends at {:.0} px, below the first screen's {screen}",
                    f["id"], b.b
                ));
            }
        }
    }
    if summary {
        match m["summary"].as_object() {
            None => out.push(format!("{name}: no summary (id=\"summary\")")),
            Some(_) if box_of(&m["summary"]).b > screen => out.push(format!(
                "{name}: the summary ends at {:.0} px, below the first screen",
                box_of(&m["summary"]).b
            )),
            Some(_) => {}
        }
    }
    out
}

/// The first screen of `page`, photographed into `dir/NAME.png` and, with
/// `LINERATE_SCREENSHOTS` set, copied there.
pub(super) fn first_screen(dir: &Path, page: &Path, name: &str) {
    let shot = dir.join(format!("{name}.png"));
    let (_, log) = chromium(
        &dir.join("profile-shot"),
        &format!("file://{}", page.display()),
        &[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={},{}", SCREEN.0, SCREEN.1),
            "--hide-scrollbars",
        ],
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot of {size} bytes; chromium said: {log}");
    if let Ok(keep) = std::env::var("LINERATE_SCREENSHOTS") {
        std::fs::copy(&shot, Path::new(&keep).join(format!("report-{name}.png"))).expect("keep the screenshot");
    }
}

/// A run's page: its document made by `linerate ARGS --json`, the page by `linerate report`.
fn run_page(dir: &Path, name: &str, args: &[String]) -> (PathBuf, Value) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (doc, v) = document(dir, name, &args);
    (report(dir, &doc, name), v)
}

#[test]
fn issue_23_every_page_kind_leads_with_a_plot_and_lays_its_text_out_apart() {
    if !can_run(&[CHROMIUM]) {
        return;
    }
    let (agent, dir, db) = setup();
    let http_agent = Agent::start(&["--http-port", "0"]);
    let http = http_agent.http_addr.clone().expect("the agent's HTTP server");
    let d = dir.path();
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.replace(AGENT, &agent.addr).replace(HTTP, &http))
            .collect()
    };
    let mut pages: Vec<(&str, PathBuf, bool)> = Vec::new();
    let mut all = Vec::new();
    let (tcp, _) = run_page(d, "tcp", &with(&["tcp", AGENT, "-t", "3", "-P", "2"]));
    pages.push(("tcp", tcp, true));
    // Reverse: the agent sends, so its loss series are the streams from it.
    let (udp, _) = run_page(d, "udp", &with(&["udp", AGENT, "-t", "2", "--gap", "50", "--reverse"]));
    let udp_page = std::fs::read_to_string(&udp).expect("read");
    if !udp_page.contains("data-name=\"stream 0 from ") {
        all.push("udp --reverse: the loss series are not the streams from the agent".to_string());
    }
    pages.push(("udp", udp, true));
    let (rr, _) = run_page(d, "rr", &with(&["rr", AGENT, "-t", "2"]));
    pages.push(("rr", rr, true));
    let (web, _) = run_page(d, "http", &with(&HTTP_RUN));
    pages.push(("http", web, true));
    let (sweep, _) = run_page(
        d,
        "tcp-sweep",
        &with(&["tcp", AGENT, "--mix", "70:30", "--sizes", "4K,64K,1M", "-t", "0.5"]),
    );
    let sweep_page = std::fs::read_to_string(&sweep).expect("read");
    if sweep_page.contains("bytes per write (-l) (bytes)") {
        all.push("tcp-sweep: an axis names its unit twice".to_string());
    }
    for column in ["transfers/s", "Mbit/s per % of host CPU"] {
        if !sweep_page.contains(&format!("<th scope=\"col\">{column}")) {
            all.push(format!("tcp-sweep: the points' table has no {column} column"));
        }
    }
    pages.push(("tcp-sweep", sweep, false));
    // The other sweeps: UDPmon's curves per size, the rr fit, the http optimum.
    let (udp_sweep, _) = run_page(
        d,
        "udp-sweep",
        &with(&["udp", AGENT, "--sizes", "64,512", "--gaps", "10,20,50", "-n", "20000"]),
    );
    pages.push(("udp-sweep", udp_sweep, false));
    let (rr_sweep, _) = run_page(
        d,
        "rr-sweep",
        &with(&["rr", AGENT, "--sizes", "64,1000,8000", "-t", "0.3", "--expect", "10G"]),
    );
    pages.push(("rr-sweep", rr_sweep, false));
    let web_sweep: Vec<&str> = [&["http", "http://{http}/bytes/2000"][..], &USER_SWEEP].concat();
    let (http_sweep, _) = run_page(d, "http-sweep", &with(&web_sweep));
    pages.push(("http-sweep", http_sweep, false));
    let (repeat, _) = run_page(
        d,
        "repeat",
        &with(&["tcp", AGENT, "--repeat", "3", "-t", "0.3", "--pause", "0"]),
    );
    pages.push(("repeat", repeat, true));
    let id = campaign(d, &agent.addr, &db);
    let page = d.join("campaign.html");
    store_report(&[&id, "-o", page.to_str().expect("path")], &db);
    pages.push(("campaign", page, true));
    let (a, b) = two_repeated_runs(&agent.addr, &db);
    let page = d.join("compare.html");
    store_report(&[&format!("{a}..{b}"), "-o", page.to_str().expect("path")], &db);
    pages.push(("compare", page, true));

    for (name, page, summary) in &pages {
        let m = measure(d, page);
        all.extend(faults(name, &m, *summary));
        // What the kind is about comes first, not a time series of one or two intervals.
        let first = m["figures"][0]["id"].as_str().unwrap_or("");
        let lead = match *name {
            "udp" => Some("fig-udp-"),
            "rr" => Some("fig-rr-"),
            "repeat" => Some("fig-repeat-runs"),
            "compare" => Some("fig-compare-"),
            "campaign" => Some("fig-campaign-"),
            _ => None,
        };
        if let Some(lead) = lead.filter(|l| !first.starts_with(l)) {
            all.push(format!("{name}: the first figure is {first}, not {lead}..."));
        }
        // The campaign's and the comparison's always; every page's when they are kept.
        if ["campaign", "compare"].contains(name) || std::env::var_os("LINERATE_SCREENSHOTS").is_some() {
            first_screen(d, page, name);
        }
    }
    assert!(all.is_empty(), "{} layout faults:\n{}", all.len(), all.join("\n"));
}
