//! Integration tests: the built binary, real agents, real traffic on loopback and across network
//! namespaces. One test binary; the harness is in util.rs.

mod agent;
mod attack_client;
mod attack_httpd;
mod cli;
mod cost;
mod exit;
mod flags;
mod http;
mod httpd;
mod lab;
mod layout;
mod netns;
mod rr;
mod settings;
mod tcp;
mod udp;
mod units;
mod util;
