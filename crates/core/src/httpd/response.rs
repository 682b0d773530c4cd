//! Response heads: status lines, `Content-Length`, `Connection` and `Date`, formatted in place
//! into a connection's fixed head buffer, and the short error texts.

use super::date::DATE_BYTES;

/// Room for the longest response head plus an error text.
pub(super) const HEAD_BUFFER_BYTES: usize = 384;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Ok,
    /// A 200 whose body is the responsiveness test's configuration (JSON).
    Document,
    /// A 200 whose body is the length of the upload it answers (text).
    Received,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    /// A method other than POST or PUT at the upload sink.
    UploadOnly,
    HeadTooLarge,
}

impl Status {
    pub(super) fn code(self) -> u16 {
        match self {
            Status::Ok | Status::Document | Status::Received => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed | Status::UploadOnly => 405,
            Status::HeadTooLarge => 431,
        }
    }

    pub(super) fn line(self) -> &'static [u8] {
        match self {
            Status::Ok | Status::Document | Status::Received => b"HTTP/1.1 200 OK\r\n",
            Status::BadRequest => b"HTTP/1.1 400 Bad Request\r\n",
            Status::NotFound => b"HTTP/1.1 404 Not Found\r\n",
            Status::MethodNotAllowed | Status::UploadOnly => b"HTTP/1.1 405 Method Not Allowed\r\n",
            Status::HeadTooLarge => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        }
    }

    /// The body of an error response.
    pub(super) fn text(self) -> &'static [u8] {
        match self {
            Status::Ok | Status::Document | Status::Received => b"",
            Status::BadRequest => b"bad request\n",
            Status::NotFound => b"not found: try /bytes/N\n",
            Status::MethodNotAllowed => b"only GET and HEAD\n",
            Status::UploadOnly => b"only POST and PUT\n",
            Status::HeadTooLarge => b"request head over 16 KiB\n",
        }
    }

    /// A 200: the body is the response's, not an error text.
    pub(super) fn ok(self) -> bool {
        self.code() == 200
    }

    /// The `Content-Type` of the body.
    pub(super) fn media(self) -> &'static str {
        match self {
            Status::Ok => "application/octet-stream",
            Status::Document => "application/json",
            _ => "text/plain",
        }
    }

    /// The methods a 405 names in its `Allow`.
    pub(super) fn allow(self) -> Option<&'static str> {
        match self {
            Status::MethodNotAllowed => Some("GET, HEAD"),
            Status::UploadOnly => Some("POST, PUT"),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnectionHeader {
    None,
    Close,
    KeepAlive,
}

/// Writes a response head (and, if `text`, the error text as its body) into `out`; returns
/// its length. Content-Length is `content_length` for 200s, the text's length otherwise.
pub(super) fn format_head(
    out: &mut [u8; HEAD_BUFFER_BYTES],
    status: Status,
    content_length: u64,
    connection: ConnectionHeader,
    date: &[u8; DATE_BYTES],
    text: bool,
) -> usize {
    let mut w = HeadWriter { out, len: 0 };
    w.put(status.line());
    w.put(b"Server: linerate\r\nDate: ");
    w.put(date);
    w.put(b"\r\nContent-Type: ");
    w.put(status.media().as_bytes());
    w.put(b"\r\nContent-Length: ");
    if status.ok() {
        w.put_decimal(content_length);
    } else {
        w.put_decimal(status.text().len() as u64);
    }
    w.put(b"\r\n");
    if let Some(methods) = status.allow() {
        w.put(b"Allow: ");
        w.put(methods.as_bytes());
        w.put(b"\r\n");
    }
    match connection {
        ConnectionHeader::None => {}
        ConnectionHeader::Close => w.put(b"Connection: close\r\n"),
        ConnectionHeader::KeepAlive => w.put(b"Connection: keep-alive\r\n"),
    }
    w.put(b"\r\n");
    if text {
        w.put(status.text());
    }
    w.len
}

/// Appends to a fixed buffer; every head is shorter than it by construction (see the tests).
pub(super) struct HeadWriter<'a> {
    pub(super) out: &'a mut [u8; HEAD_BUFFER_BYTES],
    pub(super) len: usize,
}

impl HeadWriter<'_> {
    pub(super) fn put(&mut self, bytes: &[u8]) {
        self.out[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    pub(super) fn put_decimal(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.put(&digits[i..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &[u8; DATE_BYTES] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn head(status: Status, length: u64, connection: ConnectionHeader, text: bool) -> String {
        let mut out = [0; HEAD_BUFFER_BYTES];
        let n = format_head(&mut out, status, length, connection, DATE, text);
        String::from_utf8(out[..n].to_vec()).expect("ascii")
    }

    #[test]
    fn heads_are_formatted_in_place() {
        assert_eq!(
            head(Status::Ok, 1_048_583, ConnectionHeader::None, false),
            "HTTP/1.1 200 OK\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 1048583\r\n\r\n"
        );
        assert_eq!(
            head(Status::Ok, 0, ConnectionHeader::KeepAlive, false),
            "HTTP/1.1 200 OK\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: application/octet-stream\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            head(Status::NotFound, 0, ConnectionHeader::Close, true),
            "HTTP/1.1 404 Not Found\r\nServer: linerate\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/plain\r\nContent-Length: 24\r\nConnection: close\r\n\r\nnot found: try /bytes/N\n"
        );
        let h = head(Status::MethodNotAllowed, 0, ConnectionHeader::None, false);
        assert!(
            h.contains("\r\nAllow: GET, HEAD\r\n") && h.ends_with("Content-Length: 18\r\nAllow: GET, HEAD\r\n\r\n")
        );
        // The longest possible head fits the buffer.
        let h = head(Status::UploadOnly, 0, ConnectionHeader::None, true);
        assert!(
            h.contains("\r\nAllow: POST, PUT\r\n") && h.ends_with("\r\n\r\nonly POST and PUT\n"),
            "{h}"
        );
        let h = head(Status::Document, 300, ConnectionHeader::None, false);
        assert!(
            h.starts_with("HTTP/1.1 200 OK\r\n")
                && h.contains("\r\nContent-Type: application/json\r\nContent-Length: 300\r\n"),
            "{h}"
        );
        let h = head(Status::Received, 9, ConnectionHeader::None, false);
        assert!(
            h.contains("\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n"),
            "{h}"
        );
        for s in [
            Status::Ok,
            Status::Document,
            Status::Received,
            Status::BadRequest,
            Status::NotFound,
            Status::MethodNotAllowed,
            Status::UploadOnly,
            Status::HeadTooLarge,
        ] {
            let h = head(s, u64::MAX, ConnectionHeader::KeepAlive, true);
            assert!(h.starts_with(&format!("HTTP/1.1 {} ", s.code())));
            assert!(h.len() < HEAD_BUFFER_BYTES - 100, "{} bytes", h.len());
        }
    }
}
