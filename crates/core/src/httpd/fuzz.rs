//! Fuzzing the HTTP request parser: real request heads (methods, versions,
//! keep-alive, lengths, files, pipelining, absolute targets) mutated by `crate::fuzz` and parsed
//! as a connection's read buffer holds them.
//!
//! Properties: no panic or hang; a complete head is a non-empty prefix of the buffer ending in
//! a line feed, and parsing that prefix alone gives the same request; a Host value lies within
//! the head; a route is in range (a length up to [`MAX_BODY_BYTES`], a file that exists); a
//! pipeline of heads advances.
//! [`check`] is also what the libFuzzer target `fuzz/fuzz_targets/http.rs` calls (feature
//! `fuzzing`).

use super::parser::{Parsed, parse_request};
use super::router::Route;
use super::{MAX_BODY_BYTES, MAX_HEAD_BYTES};

/// The served file names the checks route against (as the parser's unit tests use them).
fn names() -> Vec<Box<[u8]>> {
    vec![b"a.bin".to_vec().into(), b"b c".to_vec().into()]
}

/// Parses `data` as a connection's buffer holds it; what went wrong, if anything.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    let names = names();
    // What a connection's buffer can hold at once.
    let mut rest = &data[..data.len().min(MAX_HEAD_BYTES)];
    for _ in 0..64 {
        let Parsed::Complete(req) = parse_request(rest, &names) else {
            break;
        };
        let n = req.head_bytes;
        if !(n > 0 && n <= rest.len() && rest[n - 1] == b'\n') {
            return Err(format!("a head of {n} bytes in {}", rest.len()));
        }
        let alone = parse_request(&rest[..n], &names);
        if alone != Parsed::Complete(req) {
            return Err(format!("{req:?} alone parses as {alone:?}"));
        }
        let in_range = match req.route {
            Route::Bytes(len) => len <= MAX_BODY_BYTES,
            Route::File(i) => i < names.len(),
            Route::BadLength | Route::NotFound | Route::Config | Route::Upload => true,
        };
        if !in_range {
            return Err(format!("route out of range: {:?}", req.route));
        }
        // The Host value the configuration document is built from lies within the head.
        if let Some((at, len)) = req.host
            && at + len > n
        {
            return Err(format!("a Host at {at}+{len} in a head of {n} bytes"));
        }
        // The next head starts after this one's body, as the connection discards it.
        let skip = usize::try_from(req.body_bytes).unwrap_or(usize::MAX);
        rest = rest.get(n.saturating_add(skip)..).unwrap_or(&[]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::parser::{Parsed, parse_request};
    use super::{check, names};

    fn seeds() -> Vec<Vec<u8>> {
        [
            &b"GET /bytes/1024 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: linerate\r\n\r\n"[..],
            b"HEAD /files/a.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            b"GET /bytes/0 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
            b"GET http://example.invalid/bytes/5?x=1 HTTP/1.1\r\nHost: e\r\n\r\n",
            b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /bytes/2 HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            b"GET /bytes/1 HTTP/1.1\r\n\r\nGET /bytes/2 HTTP/1.1\r\n\r\nGET /files/b%20c HTTP/1.1\r\n\r\n",
            b"GET /bytes/1099511627776 HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
            b"DELETE /files/a.bin HTTP/1.1\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n\r\n",
            b"GET /bytes/7 HTTP/1.1\nHost: bare-lf\n\n",
        ]
        .iter()
        .map(|s| s.to_vec())
        .collect()
    }

    #[test]
    fn fuzz_http_request_heads() {
        let seeds = seeds();
        for s in &seeds {
            assert!(matches!(parse_request(s, &names()), Parsed::Complete(_)), "{s:?}");
        }
        let figures = crate::fuzz::run("http", &seeds, check);
        assert_eq!(figures.inputs, u64::from(crate::fuzz::cases()));
    }
}
