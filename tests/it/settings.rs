//! Every requested setting is granted, granted differently with a note giving
//! the granted value, or refused with a one-line error and a non-zero exit.

use crate::util::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn fails_with(args: &[&str], needle: &str) {
    crate::util::fails_with(args, needle, LIMIT);
}

#[test]
fn issue_13_settings_the_host_cannot_give_are_refused() {
    fails_with(
        &["tcp", "127.0.0.1", "-C", "nonexistent"],
        "congestion control 'nonexistent'",
    );
    fails_with(
        &["tcp", "127.0.0.1", "--threads", "500"],
        "threads must be between 0 and 128",
    );
    fails_with(&["serve", "--join", "10.0.0.1"], "10.0.0.1 is not a multicast group");
    fails_with(
        &["sys", "--iface", "nosuch0", "--count", "1"],
        "--iface nosuch0: no such interface",
    );
    fails_with(
        &["sys", "--config", "--iface", "nosuch0"],
        "--iface nosuch0: no such interface",
    );
}

#[test]
fn issue_13_sys_iface_shows_the_named_interface() {
    let out = linerate(&["sys", "--iface", "lo", "--count", "1", "-i", "0.1"], LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  lo rx "), "{text}");
}

/// A window past net.core.rmem_max, asked of processes without CAP_NET_ADMIN (root with that
/// capability dropped from its bounding set by setpriv, so SO_RCVBUFFORCE fails as it would for
/// any user): the receiving agent's note names what was asked and what was granted.
#[test]
fn issue_13_a_window_past_rmem_max_is_noted_with_its_grant() {
    if !is_root() || !on_path("setpriv") {
        eprintln!("skipped: needs root and setpriv (util-linux) to drop CAP_NET_ADMIN");
        return;
    }
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .expect("net.core.rmem_max")
        .trim()
        .parse()
        .expect("a number");
    // Twice the cap, in whole MiB so the note reads as the flag was written.
    let asked_mib = (2 * rmem_max).div_ceil(1 << 20);
    let window = format!("{asked_mib}M");
    let drop_admin = ["setpriv", "--bounding-set", "-net_admin", "--"];
    let agent = Agent::start_with(&drop_admin, &["--bind", "127.0.0.1", "--port", "0"], &[], &[]);
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--bounding-set", "-net_admin", "--", BIN]).args([
        "tcp",
        "--json",
        &agent.addr,
        "-t",
        "0.3",
        "--window",
        &window,
    ]);
    let doc = json_of(&run_bounded(&mut cmd, LIMIT));
    let text = doc.to_string();
    let expected = format!("--window {asked_mib} MiB asked, ");
    assert!(text.contains(&expected), "no note {expected:?} in {text}");
    assert!(
        text.contains("granted (net.core.rmem_max; run as root or raise it)"),
        "{text}"
    );
}

/// The README's multicast example: an agent on the default bind (`::`, both families) joins an
/// IPv4 group; an IPv4 client reaches it as `::ffff:a.b.c.d`, which names the interface.
#[test]
fn issue_13_multicast_works_with_the_default_bind() {
    let Some(lab) = Lab::up(2, &[]) else { return };
    let group = "239.7.7.9";
    let _agent = lab.joined_agent("h2", &["--port", "5401"], group);
    let v = lab.multicast_from_h1(group, &["10.211.0.2:5401"], "2000", LIMIT);
    let receivers = v["summary"]["receivers"].as_array().expect("receivers");
    assert_eq!(receivers.len(), 1, "{receivers:?}");
    assert_eq!(receivers[0]["datagrams_received"], 2000, "{}", receivers[0]);
}
