//! `linerate http` timed: an open loop's rate, and a lab link limited to 100 Mbit/s.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;
use serde_json::Value;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[apply(timed!)]
fn open_loop_keeps_its_rate() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/100");
    let v = http_json(&[
        &url,
        "--rate",
        "500",
        "--users",
        "32",
        "-d",
        "2s",
        "--keepalive",
        "--no-agent",
    ]);
    let r = &v["summary"]["rate"];
    let achieved = r["achieved_per_second"].as_f64().expect("achieved");
    assert!((450.0..=550.0).contains(&achieved), "{r}");
    assert!((900..=1100).contains(&u(&v, "/summary/responses")));
}

#[apply(timed!)]
fn a_100mbit_lab_link_carries_90_to_100_mbit_of_http() {
    let Some(lab) = Lab::up(2, &["rate=100mbit"]) else {
        return;
    };
    // The lab's own agent in h2 serves HTTP on the lab's port beside it (crates/lab, HTTP_PORT).
    let h2 = lab.status["hosts"][1]["address"]
        .as_str()
        .expect("h2 address")
        .to_string();
    let url = format!("http://{h2}:{}/bytes/524288", linerate_lab::HTTP_PORT);
    let agent = format!("{h2}:{}", linerate_lab::AGENT_PORT);
    let cmd = [
        "linerate",
        "http",
        "--json",
        &url,
        "--users",
        "16",
        "--ramp",
        "1s",
        "-d",
        "3s",
        "--keepalive",
        "--agent",
        &agent,
    ];
    let v = json_of(&lab.exec("h1", &cmd, LIMIT));
    check_document(&v);
    let mbit = f(&v, "/summary/bits_per_second_in") / 1e6;
    assert!(
        (90.0..=100.0).contains(&mbit),
        "{mbit} Mbit/s over a 100 Mbit/s link, want 90-100"
    );
    assert!(
        v["summary"]["server"]["interfaces"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "the server's interfaces: {}",
        v["summary"]["server"]
    );
}

#[apply(timed!)]
fn the_ramp_is_in_the_timeline_only() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/1000");
    let v = http_json(&[
        &url,
        "--users",
        "8",
        "--ramp",
        "2s",
        "-d",
        "2s",
        "--think",
        "20ms",
        "--keepalive",
        "--no-agent",
    ]);
    let steady_seconds = f(&v, "/summary/steady_seconds");
    assert!(
        (steady_seconds - 2.0).abs() < 0.1,
        "a 2 s load measured over {steady_seconds} s, want 2 ± 0.1"
    );
    let timeline: Vec<&Value> = v["intervals"]
        .as_array()
        .expect("intervals")
        .iter()
        .filter(|i| i["kind"] == "http")
        .collect();
    assert_eq!(timeline.len(), 4, "{timeline:?}");
    let ramp: Vec<&&Value> = timeline.iter().filter(|i| i["ramp"] == true).collect();
    assert_eq!(ramp.len(), 2);
    // Users come in over the ramp: fewer in its first second than at full load.
    assert!(
        u(ramp[0], "/users") < 8 && u(timeline[3], "/users") == 8,
        "users in the ramp's first second {}, in the last interval {} of 8",
        ramp[0]["users"],
        timeline[3]["users"]
    );
    let in_ramp: u64 = ramp.iter().map(|i| u(i, "/responses")).sum();
    let steady: u64 = timeline
        .iter()
        .filter(|i| i["ramp"] == false)
        .map(|i| u(i, "/responses"))
        .sum();
    assert!(in_ramp > 0, "no response in the ramp: {ramp:?}");
    let counted = u(&v, "/summary/responses");
    assert!(
        counted <= steady + 8 && counted + 8 >= steady,
        "summary {counted}, steady intervals {steady}"
    );
    // With a 20 ms think time each user makes at most 50 requests a second.
    let rps = f(&v, "/summary/responses_per_second");
    assert!(rps <= 8.0 * 50.0 + 1.0, "{rps} responses/s, want at most 401");
}

#[apply(timed!)]
fn a_user_sweep_reports_an_optimum() {
    let agent = http_agent();
    let url = agent.http_url("/bytes/2000");
    let mut args = vec!["http", "--json", &url];
    args.extend(USER_SWEEP);
    let out = linerate(&args, LIMIT);
    let v = json_of(&out);
    assert_eq!(v["test"], "http sweep");
    assert_eq!(v["parameters"][0]["name"], "users");
    assert_eq!(v["parameters"][0]["values"], serde_json::json!([1.0, 4.0, 16.0]));
    assert_eq!(v["partial"], false);
    let o = &v["summary"]["optimum"];
    // Think time bounds each user, so the throughput still grows at 16: the knee is not reached
    // before it.
    assert_eq!(o["users"], 16, "{o}");
    // Think time bounds each user: more users, more responses.
    let users: Vec<u64> = v["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["users"].as_u64().expect("users"))
        .collect();
    assert_eq!(users, [1, 4, 16]);
    let rps: Vec<f64> = v["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["result"]["summary"]["responses_per_second"].as_f64().expect("rps"))
        .collect();
    assert!(rps[0] < rps[1] && rps[1] < rps[2], "{rps:?}");
}
