//! Targets that name many agents: `dns:NAME[:PORT]` (every address a name resolves to, as a
//! headless Kubernetes Service gives one per pod) and `@FILE` (one host per line).

use super::FleetError;
use std::net::{SocketAddr, ToSocketAddrs};

/// One target as the user wrote it, expanded: a plain name is itself; `dns:NAME[:PORT]` every
/// address NAME resolves to (deduplicated, sorted, `IP:PORT` or `[V6]:PORT`, the port
/// `default_port` unless given); `@FILE` the hosts of FILE, one per line (blank lines and `#`
/// comments skipped, a line may itself be `dns:...`).
pub fn expand_target(text: &str, default_port: u16) -> Result<Vec<String>, FleetError> {
    if let Some(rest) = text.strip_prefix("dns:") {
        return resolve(rest, default_port);
    }
    if let Some(path) = text.strip_prefix('@') {
        return read_file(path, default_port);
    }
    Ok(vec![text.to_string()])
}

/// Every target expanded, in order.
pub fn expand_all(names: &[String], default_port: u16) -> Result<Vec<String>, FleetError> {
    let mut out = Vec::new();
    for n in names {
        out.extend(expand_target(n, default_port)?);
    }
    Ok(out)
}

/// `NAME`, `NAME:PORT`, `[V6]` or `[V6]:PORT`.
fn split_port(text: &str, default_port: u16) -> Result<(&str, u16), FleetError> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| FleetError::BadPort(format!("dns:{text}")))
    };
    if let Some(v6) = text.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(FleetError::Resolve {
                name: text.into(),
                error: "no closing ']'".into(),
            });
        };
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, port(p)?)),
            None if after.is_empty() => Ok((host, default_port)),
            None => Err(FleetError::BadPort(format!("dns:{text}"))),
        };
    }
    match text.split_once(':') {
        Some((host, p)) if !p.contains(':') => Ok((host, port(p)?)),
        _ => Ok((text, default_port)),
    }
}

fn resolve(text: &str, default_port: u16) -> Result<Vec<String>, FleetError> {
    let (name, port) = split_port(text, default_port)?;
    if name.is_empty() {
        return Err(FleetError::Resolve {
            name: text.into(),
            error: "no name to resolve".into(),
        });
    }
    let mut addrs: Vec<SocketAddr> = (name, port)
        .to_socket_addrs()
        .map_err(|e| FleetError::Resolve {
            name: text.into(),
            error: e.to_string(),
        })?
        .collect();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err(FleetError::NoAddress(text.into()));
    }
    Ok(addrs.iter().map(SocketAddr::to_string).collect())
}

fn read_file(path: &str, default_port: u16) -> Result<Vec<String>, FleetError> {
    let text = std::fs::read_to_string(path).map_err(|e| FleetError::File {
        path: path.into(),
        error: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |error| FleetError::Line {
            path: path.into(),
            line: i + 1,
            error: Box::new(error),
        };
        if line.starts_with('@') {
            return Err(at(FleetError::File {
                path: line.into(),
                error: "a host file cannot name another".into(),
            }));
        }
        out.extend(expand_target(line, default_port).map_err(at)?);
    }
    if out.is_empty() {
        return Err(FleetError::EmptyFile(path.into()));
    }
    Ok(out)
}
