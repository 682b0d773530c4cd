//! Response heads as the HTTP workers read them: status, Content-Length, whether the connection
//! closes after, and whether the body is chunked (not supported: counted as a bad response).

/// A parsed response head.
pub(super) struct Head {
    pub len: usize,
    pub status: u16,
    pub content_length: Option<u64>,
    pub close: bool,
    pub chunked: bool,
}

/// Ok(None) while the head is incomplete; Err for a head that cannot be an HTTP/1.x response.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<Head>, ()> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let mut h = Head {
                len,
                status: r.code.unwrap_or(0),
                content_length: None,
                close: r.version == Some(0),
                chunked: false,
            };
            for hd in r.headers.iter() {
                if hd.name.eq_ignore_ascii_case("content-length") {
                    let v = std::str::from_utf8(hd.value).map_err(|_| ())?;
                    h.content_length = Some(v.trim().parse().map_err(|_| ())?);
                } else if hd.name.eq_ignore_ascii_case("connection") {
                    let v = hd.value.to_ascii_lowercase();
                    if v.windows(5).any(|w| w == b"close") {
                        h.close = true;
                    } else if v.windows(10).any(|w| w == b"keep-alive") {
                        h.close = false;
                    }
                } else if hd.name.eq_ignore_ascii_case("transfer-encoding") {
                    h.chunked = hd.value.to_ascii_lowercase().windows(7).any(|w| w == b"chunked");
                }
            }
            // 1xx, 204 and 304 carry no body.
            if h.status < 200 || h.status == 204 || h.status == 304 {
                h.content_length = Some(0);
            }
            Ok(Some(h))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_heads_parse() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhello")
            .expect("valid")
            .expect("complete");
        assert_eq!(
            (h.status, h.content_length, h.close, h.chunked),
            (200, Some(12), true, false)
        );
        assert_eq!(h.len, 58);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le").expect("valid").is_none());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        let h = parse_head(b"HTTP/1.0 404 Not Found\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert_eq!((h.status, h.content_length, h.close), (404, None, true));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert!(h.chunked);
        let h = parse_head(b"HTTP/1.1 204 No Content\r\n\r\n")
            .expect("valid")
            .expect("complete");
        assert_eq!(h.content_length, Some(0));
    }
}
