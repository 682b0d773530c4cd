//! The server half of the responsiveness test (draft-ietf-ippm-responsiveness): the
//! configuration document at `/.well-known/nq` and the three endpoints it names, a 1-byte
//! object, a large object and an upload sink.
//!
//! The document is built per request from the authority the client used (`Host`, or HTTP/2's
//! `:authority`; the server's own address when it sent none) and the scheme it came on, so the
//! URLs it names reach this server the way the client already reached it. It carries the URL
//! keys twice: the draft's (`small_download_url`, `large_download_url`, `upload_url`) and the
//! older ones of Apple's server spec (`small_https_download_url`, `large_https_download_url`,
//! `https_upload_url`), which goresponsiveness and Apple's `networkQuality` read, and which
//! Cloudflare's client requires beside the draft's. `test_endpoint` is the authority's host.
//!
//! The small and large objects are pattern bodies (routed as `/bytes/N` is), the sink reads a
//! request body and drops it: over HTTP/1.1 in the connection's read buffer, over HTTP/2 frame by
//! frame as h2 hands them over ([`drain`]), its window given back as each is dropped.

use std::net::SocketAddr;
use std::time::Duration;

/// Where the configuration document is (RFC 8615's well-known prefix, the draft's name).
pub(super) const CONFIG_PATH: &[u8] = b"/.well-known/nq";
/// The 1-byte object.
pub(super) const SMALL_PATH: &[u8] = b"/rpm/small";
/// The large object, [`LARGE_BYTES`] long.
pub(super) const LARGE_PATH: &[u8] = b"/rpm/large";
/// The upload sink (POST or PUT).
pub(super) const UPLOAD_PATH: &[u8] = b"/rpm/upload";
/// The large object's length: the most `/bytes/N` serves (1 TiB). The draft asks for at least
/// 8 GB and says it must grow with link speeds; 8 GiB lasts under 7 s at 10 Gbit/s, 1 TiB
/// over 14 minutes, so no load connection of a test ends its download.
pub(super) const LARGE_BYTES: u64 = super::MAX_BODY_BYTES;
const _: () = assert!(LARGE_BYTES >= 8 << 30, "the draft asks for at least 8 GB");
/// The longest authority a document is built from: a DNS name (253), brackets or a colon and a
/// port. Longer ones are a 400, so a document stays under [`MAX_DOCUMENT_BYTES`].
const MAX_AUTHORITY_BYTES: usize = 270;
/// The longest configuration document (seven copies of the authority and the fixed text).
pub(super) const MAX_DOCUMENT_BYTES: usize = 7 * MAX_AUTHORITY_BYTES + 512;

/// Whether `authority` is a host with an optional port that can go into a URL and a JSON
/// string as it is: a name of letters, digits, `-`, `.` and `_`, an IPv4 address, or an IPv6
/// address in brackets; then `:PORT`. Nothing to escape, no way to end the string early.
pub(super) fn host_of(authority: &[u8]) -> Option<&[u8]> {
    if authority.is_empty() || authority.len() > MAX_AUTHORITY_BYTES {
        return None;
    }
    let (host, rest) = if authority[0] == b'[' {
        let close = authority.iter().position(|b| *b == b']')?;
        let inside = &authority[1..close];
        let ok = !inside.is_empty() && inside.iter().all(|b| b.is_ascii_hexdigit() || *b == b':' || *b == b'.');
        (ok.then_some(inside)?, &authority[close + 1..])
    } else {
        let end = authority.iter().position(|b| *b == b':').unwrap_or(authority.len());
        let name = &authority[..end];
        let ok = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.' || *b == b'_');
        (ok.then_some(name)?, &authority[end..])
    };
    match rest {
        [] => Some(host),
        [b':', port @ ..] if (1..=5).contains(&port.len()) && port.iter().all(u8::is_ascii_digit) => Some(host),
        _ => None,
    }
}

/// Writes the configuration document for a client that reached this server at `authority`
/// (over TLS when `tls`) into `out`; false, and `out` left empty, when the authority is not one
/// [`host_of`] takes.
pub(super) fn config_document(out: &mut Vec<u8>, tls: bool, authority: &[u8]) -> bool {
    out.clear();
    let Some(host) = host_of(authority) else {
        return false;
    };
    // One allocation for the connection's first document, none after.
    out.reserve(MAX_DOCUMENT_BYTES);
    let scheme: &[u8] = if tls { b"https://" } else { b"http://" };
    let url = |out: &mut Vec<u8>, key: &str, path: &[u8], last: bool| {
        out.extend_from_slice(b"    \"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\": \"");
        out.extend_from_slice(scheme);
        out.extend_from_slice(authority);
        out.extend_from_slice(path);
        out.extend_from_slice(if last { b"\"\n" } else { b"\",\n" });
    };
    out.extend_from_slice(b"{\n  \"version\": 1,\n  \"urls\": {\n");
    url(out, "small_download_url", SMALL_PATH, false);
    url(out, "large_download_url", LARGE_PATH, false);
    url(out, "upload_url", UPLOAD_PATH, false);
    url(out, "small_https_download_url", SMALL_PATH, false);
    url(out, "large_https_download_url", LARGE_PATH, false);
    url(out, "https_upload_url", UPLOAD_PATH, true);
    out.extend_from_slice(b"  },\n  \"test_endpoint\": \"");
    out.extend_from_slice(host);
    out.extend_from_slice(b"\"\n}\n");
    true
}

/// [`config_document`] for a request that named no authority: this server's own address.
pub(super) fn config_document_at(out: &mut Vec<u8>, tls: bool, local: SocketAddr) -> bool {
    config_document(out, tls, local.to_string().as_bytes())
}

/// The configuration for an HTTP/2 request: for the authority it named (`:authority`, else
/// `Host`, else `local`, the address it reached), over TLS when `tls`; None for an authority
/// that cannot go into the document's URLs.
pub(super) fn config_for<T>(req: &http::Request<T>, tls: bool, local: Option<SocketAddr>) -> Option<bytes::Bytes> {
    let named = req.uri().authority().map(|a| a.as_str().as_bytes());
    let named = named.or_else(|| req.headers().get(http::header::HOST).map(|h| h.as_bytes()));
    let mut doc = Vec::new();
    let made = match (named, local) {
        (Some(authority), _) => config_document(&mut doc, tls, authority),
        (None, Some(local)) => config_document_at(&mut doc, tls, local),
        (None, None) => false,
    };
    made.then(|| bytes::Bytes::from(doc))
}

/// How reading an HTTP/2 upload ended without its end.
#[derive(Debug)]
pub(super) enum Drained {
    /// Nothing came for the idle limit.
    Stalled,
    /// A reset or a connection error.
    Failed(h2::Error),
}

/// Reads an HTTP/2 request body to its end and drops it, each frame's bytes given back to the
/// stream's and the connection's windows as it goes: the body's length. h2 holds at most the
/// windows the server granted; nothing here holds more than one frame.
pub(super) async fn drain(body: &mut h2::RecvStream, idle: Duration) -> Result<u64, Drained> {
    let mut bytes = 0u64;
    loop {
        match tokio::time::timeout(idle, body.data()).await {
            Err(_) => return Err(Drained::Stalled),
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(e))) => return Err(Drained::Failed(e)),
            Ok(Some(Ok(data))) => {
                bytes += data.len() as u64;
                let _ = body.flow_control().release_capacity(data.len());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(tls: bool, authority: &str) -> Option<serde_json::Value> {
        let mut out = vec![b'x'];
        if !config_document(&mut out, tls, authority.as_bytes()) {
            assert!(out.is_empty());
            return None;
        }
        assert!(out.len() <= MAX_DOCUMENT_BYTES);
        Some(serde_json::from_slice(&out).expect("the document is JSON"))
    }

    #[test]
    fn the_document_names_every_url_under_both_spellings_from_scheme_and_authority() {
        let doc = document(true, "example.net:8443").expect("a document");
        assert_eq!(doc["version"], 1);
        let urls = &doc["urls"];
        for (draft, apple, path) in [
            ("small_download_url", "small_https_download_url", "/rpm/small"),
            ("large_download_url", "large_https_download_url", "/rpm/large"),
            ("upload_url", "https_upload_url", "/rpm/upload"),
        ] {
            let want = format!("https://example.net:8443{path}");
            assert_eq!(urls[draft], want.as_str(), "{draft}");
            assert_eq!(urls[apple], want.as_str(), "{apple}");
        }
        assert_eq!(urls.as_object().expect("an object").len(), 6);
        assert_eq!(doc["test_endpoint"], "example.net");

        let doc = document(false, "127.0.0.1:8080").expect("a document");
        assert_eq!(doc["urls"]["upload_url"], "http://127.0.0.1:8080/rpm/upload");
        assert_eq!(
            doc["urls"]["small_https_download_url"],
            "http://127.0.0.1:8080/rpm/small"
        );
        assert_eq!(doc["test_endpoint"], "127.0.0.1");
        let doc = document(true, "[::1]:443").expect("a document");
        assert_eq!(doc["urls"]["large_download_url"], "https://[::1]:443/rpm/large");
        assert_eq!(doc["test_endpoint"], "::1");
        let doc = document(true, "localhost").expect("a document");
        assert_eq!(doc["urls"]["small_download_url"], "https://localhost/rpm/small");

        let mut out = Vec::new();
        let local = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 8443));
        assert!(config_document_at(&mut out, true, local));
        assert!(
            String::from_utf8(out)
                .expect("utf-8")
                .contains("\"https://[::1]:8443/rpm/small\"")
        );
    }

    #[test]
    fn an_http2_request_s_document_takes_authority_then_host_then_the_local_address() {
        let text = |req: http::Request<()>, tls, local| {
            config_for(&req, tls, local).map(|b| String::from_utf8(b.to_vec()).expect("utf-8"))
        };
        let local = Some(SocketAddr::from(([127, 0, 0, 1], 9000)));
        let with_authority = http::Request::get("https://a.example:8443/.well-known/nq")
            .header("host", "b.example")
            .body(())
            .expect("request");
        let doc = text(with_authority, true, local).expect("a document");
        assert!(
            doc.contains(r#""upload_url": "https://a.example:8443/rpm/upload""#),
            "{doc}"
        );
        let with_host = http::Request::get("/.well-known/nq")
            .header("host", "b.example:80")
            .body(())
            .expect("request");
        let doc = text(with_host, false, local).expect("a document");
        assert!(
            doc.contains(r#""upload_url": "http://b.example:80/rpm/upload""#),
            "{doc}"
        );
        let bare = || http::Request::get("/.well-known/nq").body(()).expect("request");
        let doc = text(bare(), false, local).expect("a document");
        assert!(
            doc.contains(r#""small_https_download_url": "http://127.0.0.1:9000/rpm/small""#),
            "{doc}"
        );
        assert_eq!(text(bare(), false, None), None);
        let bad = http::Request::get("/.well-known/nq")
            .header("host", "a b")
            .body(())
            .expect("request");
        assert_eq!(text(bad, true, local), None);
    }

    #[test]
    fn authorities_that_cannot_go_into_a_url_or_a_string_as_they_are_get_no_document() {
        let long = "a".repeat(MAX_AUTHORITY_BYTES + 1);
        for bad in [
            "",
            "a\"b",
            "a\\b",
            "a b",
            "a/b",
            "a:",
            "a:123456",
            "a:8x",
            ":80",
            "[]",
            "[::1",
            "[::1]x",
            "[g::1]",
            "a:1:2",
            "user@host",
            long.as_str(),
        ] {
            assert!(document(true, bad).is_none(), "{bad:?}");
        }
        assert!(document(true, &"a".repeat(MAX_AUTHORITY_BYTES)).is_some());
        assert_eq!(host_of(b"my_host-1.example:65535"), Some(&b"my_host-1.example"[..]));
        assert_eq!(host_of(b"[fe80::1.2.3.4]"), Some(&b"fe80::1.2.3.4"[..]));
    }
}
