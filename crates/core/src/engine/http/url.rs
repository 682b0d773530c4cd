//! The URLs an HTTP test fetches: `http://HOST[:PORT][/PATH]` taken apart ([`HttpUrl`]), and once
//! resolved, the request bytes built for each before the clock starts ([`HttpTarget`]).

use std::net::SocketAddr;

/// A URL taken apart: what to connect to and what to ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// `http://HOST[:PORT][/PATH]`; HOST may be `[v6]`. No https: linerate measures the network
    /// and the server, not a TLS library.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("'{url}' is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("'{url}' has no host (or has credentials)"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let end = v6.find(']').ok_or_else(|| format!("'{url}': unclosed '['"))?;
            let port = &v6[end + 1..];
            (v6[..end].to_string(), port.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => p.parse().map_err(|_| format!("'{url}': bad port '{p}'"))?,
            None => 80,
        };
        if path.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(format!("'{url}': spaces or control characters in the path"));
        }
        Ok(HttpUrl {
            host,
            port,
            path: path.to_string(),
        })
    }

    /// The Host header's value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// One URL, resolved, with its request bytes.
#[derive(Clone, Debug)]
pub struct HttpTarget {
    /// The server as the URL names it (its authority: `HOST[:PORT]`): what the per-server
    /// figures are kept under.
    pub server: String,
    pub addr: SocketAddr,
    pub request: Vec<u8>,
}

impl HttpTarget {
    pub fn new(url: &HttpUrl, addr: SocketAddr, keepalive: bool) -> HttpTarget {
        // As short as HTTP/1.1 allows (keep-alive is its default): every header is work for the
        // server under test.
        let connection = if keepalive { "" } else { "Connection: close\r\n" };
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: linerate\r\n{connection}\r\n",
            url.path,
            url.authority(),
        )
        .into_bytes();
        HttpTarget {
            server: url.authority(),
            addr,
            request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_apart() {
        let u = HttpUrl::parse("http://10.0.0.2:8080/bytes/524288?x=1").expect("parses");
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("10.0.0.2", 8080, "/bytes/524288?x=1")
        );
        assert_eq!(u.authority(), "10.0.0.2:8080");
        let u = HttpUrl::parse("http://example.test").expect("parses");
        assert_eq!(
            (u.port, u.path.as_str(), u.authority().as_str()),
            (80, "/", "example.test")
        );
        let u = HttpUrl::parse("http://[::1]:81/a").expect("parses");
        assert_eq!(
            (u.host.as_str(), u.port, u.authority().as_str()),
            ("::1", 81, "[::1]:81")
        );
        for bad in [
            "https://x/",
            "x/y",
            "http://",
            "http://h:port/",
            "http://h/a b",
            "http://u@h/",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
