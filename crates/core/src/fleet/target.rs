//! Targets that name many agents: `dns:NAME[:PORT]` (every address a name resolves to, as a
//! headless Kubernetes Service gives one per pod) and `@FILE` (one host per line). Each is
//! bounded (`@/dev/zero` was read to 2.1 GB): a host file is read to
//! [`MAX_HOST_FILE_BYTES`] and [`MAX_HOST_FILE_LINES`], a name's answer taken to
//! [`MAX_TARGETS`] addresses, and the whole list to [`MAX_TARGETS`]; past a bound the list is
//! refused, naming it.

use super::FleetError;
use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};

/// The most targets one test or fleet names, after `dns:` and `@FILE` are expanded (the
/// streams of a test are numbered in 16 bits; a test's agents are each watched by a thread).
pub const MAX_TARGETS: usize = 1024;
/// The most bytes of a host file read.
pub const MAX_HOST_FILE_BYTES: u64 = 1 << 20;
/// The most lines a host file may have, blank and comment lines counted.
pub const MAX_HOST_FILE_LINES: usize = 16_384;

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

/// Every target expanded, in order; more than [`MAX_TARGETS`] in all is refused.
pub fn expand_all(names: &[String], default_port: u16) -> Result<Vec<String>, FleetError> {
    at_most_targets(names.len())?;
    let mut out = Vec::new();
    for n in names {
        out.extend(expand_target(n, default_port)?);
        at_most_targets(out.len())?;
    }
    Ok(out)
}

/// Refuses `count` targets when that is more than [`MAX_TARGETS`].
fn at_most_targets(count: usize) -> Result<(), FleetError> {
    if count > MAX_TARGETS {
        return Err(FleetError::TooManyTargets {
            count,
            max: MAX_TARGETS,
        });
    }
    Ok(())
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
    let answer = (name, port).to_socket_addrs().map_err(|e| FleetError::Resolve {
        name: text.into(),
        error: e.to_string(),
    })?;
    let mut addrs: Vec<SocketAddr> = answer.take(MAX_TARGETS + 1).collect();
    if addrs.len() > MAX_TARGETS {
        return Err(FleetError::Resolve {
            name: text.into(),
            error: format!("more than {MAX_TARGETS} addresses, the most targets a test may have"),
        });
    }
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err(FleetError::NoAddress(text.into()));
    }
    Ok(addrs.iter().map(SocketAddr::to_string).collect())
}

fn read_file(path: &str, default_port: u16) -> Result<Vec<String>, FleetError> {
    let file_error = |error: String| FleetError::File {
        path: path.into(),
        error,
    };
    // One byte past the bound says the file is longer than it (`/dev/zero`, a FIFO never ends).
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_HOST_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| file_error(e.to_string()))?;
    if bytes.len() as u64 > MAX_HOST_FILE_BYTES {
        return Err(file_error(format!(
            "longer than the {MAX_HOST_FILE_BYTES} bytes a host file may have"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| file_error(format!("not UTF-8 text: {e}")))?;
    let lines = text.lines().count();
    if lines > MAX_HOST_FILE_LINES {
        return Err(file_error(format!(
            "{lines} lines, more than the {MAX_HOST_FILE_LINES} lines a host file may have"
        )));
    }
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
        at_most_targets(out.len())?;
    }
    if out.is_empty() {
        return Err(FleetError::EmptyFile(path.into()));
    }
    Ok(out)
}
