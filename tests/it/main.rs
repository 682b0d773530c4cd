//! Integration tests: the built binary, real agents, real traffic on loopback and across network
//! namespaces. One test binary; the harness is in util.rs.

mod agent;
mod attack_agent;
mod attack_client;
mod attack_httpd;
mod brief;
mod cli;
mod compare;
mod cost;
mod deploy;
mod examples;
mod exit;
mod flags;
mod fleet;
mod http;
mod httpd;
mod https;
mod kube;
mod lab;
mod layout;
mod matrix;
mod metrics;
mod mix;
mod netns;
mod nginx;
mod plan;
mod profile;
mod repeat;
mod report;
mod rr;
mod settings;
mod store;
mod tcp;
mod udp;
mod units;
mod util;
