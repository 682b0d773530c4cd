//! `linerate http --http2` timed: an open loop holds its rate.

use crate::kinds::*;
use crate::util::*;
use macro_rules_attribute::apply;

#[apply(timed!)]
fn issue_27_open_loop_rps_over_http2_holds_its_rate() {
    let agent = Agent::start(&["--http-port", "0"]);
    let url = format!("http://{}/bytes/100", agent.http_addr.clone().expect("http"));
    let v = json_of(&http2(&[
        &url,
        "--users",
        "2",
        "--streams",
        "4",
        "--rps",
        "200",
        "-d",
        "3s",
    ]));
    check_identities(&v);
    let achieved = f(&v, "/summary/rate/achieved_per_second");
    // 200/s asked of a server that answers thousands: loose, as a loaded box may stall a while.
    assert!(
        (120.0..=230.0).contains(&achieved),
        "achieved {achieved}/s: {}",
        v["summary"]
    );
    assert_eq!(
        u(&v, "/summary/connections/attempted"),
        2,
        "{}",
        v["summary"]["connections"]
    );
}
