//! `--baseline`'s I/O: each URL fetched once for its size, linerate's own server started on
//! loopback, and the same users run against it. What it fetches, reads and runs is the sweep's
//! data (`linerate_core::sweep::http`: [`probed_body_bytes`], [`baseline_load`]).

use linerate_core::client::HttpTarget;
use linerate_core::httpd::{Httpd, HttpdConfig};
use linerate_core::result::TestResult;
use linerate_core::spec::HttpSpec;
use linerate_core::sweep::http::{BaselineError, HttpBaseline, ProbeError, baseline_load, probed_body_bytes};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Fetches a target once (5 s at most per step) and returns its body's length, from the
/// response's Content-Length.
fn probe_body_bytes(target: &HttpTarget) -> Result<u64, ProbeError> {
    let mut s = TcpStream::connect_timeout(&target.addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(&target.request)?;
    let mut head = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(ProbeError::Closed);
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(bytes) = probed_body_bytes(&head)? {
            return Ok(bytes);
        }
    }
}

/// `--baseline`: fetches each target once for its size, starts linerate's own server on
/// loopback serving that many bytes, and runs `run` against it with the same users (5 s at
/// most, no ramp).
pub fn baseline(
    spec: &HttpSpec,
    targets: &[HttpTarget],
    run: impl FnOnce(&HttpSpec, &[HttpTarget]) -> anyhow::Result<TestResult>,
) -> anyhow::Result<HttpBaseline> {
    let mut sizes = Vec::with_capacity(targets.len());
    for t in targets {
        let bytes = probe_body_bytes(t).map_err(|source| BaselineError::Probe { addr: t.addr, source })?;
        sizes.push(bytes);
    }
    let server = Httpd::bind(
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        HttpdConfig::default(),
    )
    .and_then(Httpd::spawn)
    .map_err(BaselineError::Server)?;
    let (load, target, object_bytes) = baseline_load(spec, &sizes, server.local_addr());
    let r = run(&load, &[target])?;
    drop(server);
    Ok(HttpBaseline::measured(&r, object_bytes, spec.users))
}
