//! Functional tests: the built binary, real agents, real traffic on loopback and across network
//! namespaces, run in parallel. They bound time only from above ("did not hang"): whatever
//! asserts a rate, a delay, a spacing, a loss share, a CPU or interface count, a start skew or a
//! ratio to a peer tool is in tests/timed, which runs alone (layout/ holds the
//! split). The harness both share is tests/harness/util.rs.

mod agent;
#[path = "../harness/attack.rs"]
mod attack;
mod attack_agent;
mod attack_client;
mod attack_httpd;
mod bench;
mod brief;
mod cli;
mod compare;
mod cost;
mod deploy;
mod dscp;
mod examples;
mod exit;
#[path = "../harness/fake_agent.rs"]
mod fake_agent;
mod flags;
mod fleet;
mod h2;
mod h2_client;
mod harden3_fleetclock;
mod harden3_h2client;
mod harden3_iperf3targets;
mod harden3_relay;
mod harden3_serving;
mod harness;
mod http;
mod http_probe;
mod httpd;
mod https;
#[path = "../harness/iperf3.rs"]
mod iperf3;
mod iperf3_client;
mod iperf3_server;
#[path = "../harness/kinds.rs"]
mod kinds;
mod kube;
mod lab;
mod layout;
mod matrix;
mod metrics;
mod mix;
mod netns;
mod nginx;
mod plan;
mod probe;
mod profile;
mod repeat;
mod report;
mod rpm;
mod rpm_server;
mod rr;
mod rrul;
mod sched;
mod server_counts;
mod settings;
mod store;
mod tcp;
mod udp;
#[path = "../harness/unit_check.rs"]
mod unit_check;
mod units;
#[path = "../harness/util.rs"]
mod util;
