//! Which answer a request target gets: `/bytes/N`, `/files/NAME` (a file opened at bind time),
//! the responsiveness test's configuration and the endpoints it names ([`super::rpm`]), or 404;
//! a bad N is a 400. Below the parser, which routes each head it reads and shares
//! [`parse_decimal`] for `Content-Length`.

use super::MAX_BODY_BYTES;
use super::rpm::{CONFIG_PATH, LARGE_BYTES, LARGE_PATH, SMALL_PATH, UPLOAD_PATH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// `/bytes/N`.
    Bytes(u64),
    /// `/files/NAME`: the index of the file.
    File(usize),
    /// `/bytes/` followed by something that is not a number up to [`MAX_BODY_BYTES`].
    BadLength,
    /// `/.well-known/nq`: the responsiveness test's configuration document.
    Config,
    /// The responsiveness test's upload sink: a POST or PUT body read and dropped.
    Upload,
    NotFound,
}

pub(super) fn route(target: &[u8], names: &[Box<[u8]>]) -> Route {
    let path = origin_path(target);
    // The small and large objects of the responsiveness test are pattern bodies like
    // `/bytes/N`, so they take the same paths (sendfile, DATA slices of the one buffer).
    match path {
        SMALL_PATH => return Route::Bytes(1),
        LARGE_PATH => return Route::Bytes(LARGE_BYTES),
        UPLOAD_PATH => return Route::Upload,
        CONFIG_PATH => return Route::Config,
        _ => {}
    }
    if let Some(n) = path.strip_prefix(b"/bytes/") {
        return match parse_decimal(n) {
            Some(n) if n <= MAX_BODY_BYTES => Route::Bytes(n),
            _ => Route::BadLength,
        };
    }
    // Names are compared as sent: no percent-decoding.
    if let Some(name) = path.strip_prefix(b"/files/")
        && let Some(i) = names.iter().position(|n| **n == *name)
    {
        return Route::File(i);
    }
    Route::NotFound
}

/// The path of a request target: origin-form without its query, or the path of an
/// absolute-form target (RFC 9112 §3.2.2, which servers must accept).
pub(super) fn origin_path(target: &[u8]) -> &[u8] {
    let mut path = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if path.len() >= scheme.len() && path[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &path[scheme.len()..];
            path = rest.iter().position(|b| *b == b'/').map_or(b"/", |i| &rest[i..]);
            break;
        }
    }
    let end = path.iter().position(|b| *b == b'?' || *b == b'#').unwrap_or(path.len());
    &path[..end]
}

/// A non-empty run of ASCII digits that fits in a u64.
pub(super) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if !d.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpd::names;

    #[test]
    fn bytes_length_is_decimal_up_to_a_tebibyte() {
        let n = &names();
        assert_eq!(route(b"/bytes/0", n), Route::Bytes(0));
        assert_eq!(route(b"/bytes/1", n), Route::Bytes(1));
        assert_eq!(route(b"/bytes/007", n), Route::Bytes(7));
        assert_eq!(route(b"/bytes/1099511627776", n), Route::Bytes(1 << 40));
        assert_eq!(route(b"/bytes/1099511627777", n), Route::BadLength);
        assert_eq!(route(b"/bytes/99999999999999999999999", n), Route::BadLength);
        for bad in [
            "/bytes/",
            "/bytes/-1",
            "/bytes/+1",
            "/bytes/1k",
            "/bytes/ 1",
            "/bytes/1/2",
            "/bytes/0x10",
        ] {
            assert_eq!(route(bad.as_bytes(), n), Route::BadLength, "{bad}");
        }
    }

    #[test]
    fn targets_route_by_path() {
        let n = &names();
        assert_eq!(route(b"/bytes/10?x=1", n), Route::Bytes(10));
        assert_eq!(route(b"/bytes/10#f", n), Route::Bytes(10));
        assert_eq!(route(b"http://host:80/bytes/5", n), Route::Bytes(5));
        assert_eq!(route(b"HTTP://host/files/a.bin", n), Route::File(0));
        assert_eq!(route(b"http://host", n), Route::NotFound);
        assert_eq!(route(b"/files/a.bin", n), Route::File(0));
        assert_eq!(route(b"/files/b c", n), Route::File(1));
        assert_eq!(route(b"/files/a.bi", n), Route::NotFound);
        assert_eq!(route(b"/files/", n), Route::NotFound);
        assert_eq!(route(b"/", n), Route::NotFound);
        assert_eq!(route(b"/bytes", n), Route::NotFound);
        assert_eq!(route(b"/bytesx/1", n), Route::NotFound);
        assert_eq!(route(b"*", n), Route::NotFound);
    }

    #[test]
    fn the_responsiveness_paths_route_to_their_answers() {
        let n = &names();
        assert_eq!(route(b"/.well-known/nq", n), Route::Config);
        assert_eq!(route(b"/.well-known/nq?x=1", n), Route::Config);
        assert_eq!(route(b"https://h:8443/.well-known/nq", n), Route::Config);
        assert_eq!(route(b"/rpm/small", n), Route::Bytes(1));
        assert_eq!(route(b"/rpm/large", n), Route::Bytes(LARGE_BYTES));
        assert_eq!(route(b"/rpm/upload", n), Route::Upload);
        assert_eq!(route(b"/rpm/upload?n=1", n), Route::Upload);
        for other in [
            "/.well-known/nq/",
            "/.well-known/NQ",
            "/rpm/",
            "/rpm/small/",
            "/rpm/smallx",
            "/rpm",
        ] {
            assert_eq!(route(other.as_bytes(), n), Route::NotFound, "{other}");
        }
    }
}
