//! Request heads: method, target, version, `Connection` and `Content-Length` (RFC 9112), parsed
//! in place from a connection's read buffer with `httparse`; nothing is allocated.

use super::router::{Route, parse_decimal, route};
use std::mem::MaybeUninit;

/// Header lines a request head may have (more is a 431, as an oversized head is).
pub(super) const MAX_HEADERS: usize = 512;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Method {
    Get,
    Head,
    /// POST or PUT: what the upload sink takes.
    Upload,
    Other,
}

/// What a request head asks for, as far as the response depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// Bytes of the head, request line to the empty line included.
    pub(super) head_bytes: usize,
    pub(super) method: Method,
    pub(super) route: Route,
    /// The connection stays open after the response.
    pub(super) keep_alive: bool,
    /// HTTP/1.0 (the response then says `Connection: keep-alive` when it keeps it).
    pub(super) http10: bool,
    /// Request body bytes after the head (Content-Length), read and dropped.
    pub(super) body_bytes: u64,
    /// The body is chunked (`Transfer-Encoding`): its length is known only at its end.
    pub(super) chunked: bool,
    /// Where the `Host` value is in the head: offset and length (trimmed); None without one.
    pub(super) host: Option<(usize, usize)>,
    /// `Expect: 100-continue`: the client waits for a `100 Continue` before its body.
    pub(super) expect_continue: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    Complete(Request),
    /// More bytes needed.
    Partial,
    Malformed,
    /// More headers than we keep room for.
    TooLarge,
}

/// Parses the request head at the start of `buf`; `names` are the served file names.
pub(super) fn parse_request(buf: &[u8], names: &[Box<[u8]>]) -> Parsed {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let head_bytes = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::TooLarge,
        Err(_) => return Parsed::Malformed,
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        Some("POST" | "PUT") => Method::Upload,
        _ => Method::Other,
    };
    let http10 = req.version == Some(0);
    let (mut close, mut keep) = (false, false);
    let mut body_bytes: Option<u64> = None;
    let mut chunked = false;
    let mut host = None;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|b| *b == b',') {
                let token = token.trim_ascii();
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // RFC 9112 §6.3: an invalid length, or two that differ, leave the message unframed.
            match (parse_decimal(h.value.trim_ascii()), body_bytes) {
                (Some(n), None) => body_bytes = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return Parsed::Malformed,
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        } else if h.name.eq_ignore_ascii_case("host") {
            let value = h.value.trim_ascii();
            // The value is a slice of `buf`: where it starts is its distance from buf's start.
            host = Some((value.as_ptr() as usize - buf.as_ptr() as usize, value.len()));
        }
    }
    let keep_alive = !close && (!http10 || keep) && !chunked;
    Parsed::Complete(Request {
        head_bytes,
        method,
        route: route(req.path.unwrap_or("").as_bytes(), names),
        keep_alive,
        http10,
        // A chunked body is not read: the connection closes after the response instead
        // (RFC 9112 §9.6 lets a server close whenever it cannot frame the next request).
        body_bytes: if chunked { 0 } else { body_bytes.unwrap_or(0) },
        chunked,
        host,
        expect_continue,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::httpd::names;

    fn complete(buf: &[u8]) -> Request {
        match parse_request(buf, &names()) {
            Parsed::Complete(r) => r,
            other => panic!("{other:?} for {:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn keep_alive_follows_version_and_connection() {
        assert!(complete(b"GET /bytes/1 HTTP/1.1\r\nHost: x\r\n\r\n").keep_alive);
        assert!(!complete(b"GET /bytes/1 HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!complete(b"GET /bytes/1 HTTP/1.1\r\nconnection: Upgrade, CLOSE\r\n\r\n").keep_alive);
        let r10 = complete(b"GET /bytes/1 HTTP/1.0\r\n\r\n");
        assert!(!r10.keep_alive && r10.http10);
        assert!(complete(b"GET /bytes/1 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
        assert!(!complete(b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").keep_alive);
    }

    #[test]
    fn heads_parse_with_their_length_and_body() {
        let two = b"GET /bytes/5 HTTP/1.1\r\n\r\nHEAD /files/a.bin HTTP/1.1\r\n\r\n";
        let first = complete(two);
        assert_eq!(first.head_bytes, 25);
        assert_eq!(first.route, Route::Bytes(5));
        assert_eq!(first.method, Method::Get);
        let second = complete(&two[first.head_bytes..]);
        assert_eq!((second.method, second.route), (Method::Head, Route::File(0)));
        let post = complete(b"POST /x HTTP/1.1\r\nContent-Length: 12\r\n\r\nhello");
        assert_eq!((post.method, post.body_bytes, post.host), (Method::Upload, 12, None));
        let put = b"PUT /x HTTP/1.1\r\nHost:  a.example:81 \r\nTransfer-Encoding: chunked\r\n\r\n";
        let put_req = complete(put);
        assert_eq!((put_req.method, put_req.chunked), (Method::Upload, true));
        let (at, len) = put_req.host.expect("a host");
        assert_eq!(&put[at..at + len], b"a.example:81");
        assert_eq!(complete(b"DELETE /x HTTP/1.1\r\n\r\n").method, Method::Other);
        let same = complete(b"GET / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n");
        assert_eq!(same.body_bytes, 3);
        let p = |b: &[u8]| parse_request(b, &names());
        assert_eq!(p(b"GET /bytes/5 HTTP/1.1\r\nHost: x\r\n"), Parsed::Partial);
        assert_eq!(p(b"GET"), Parsed::Partial);
        assert_eq!(p(b"GARBAGE\r\n\r\n"), Parsed::Malformed);
        assert_eq!(p(b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), Parsed::Malformed);
        assert_eq!(
            p(b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Parsed::Malformed
        );
        assert_eq!(p(b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), Parsed::Malformed);
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(p(&many), Parsed::TooLarge);
    }
}
