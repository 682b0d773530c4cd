//! The URLs an HTTP test fetches: `http[s]://HOST[:PORT][/PATH]` taken apart ([`HttpUrl`]), and
//! once resolved, the request bytes (and for https the TLS server name) built for each before the
//! clock starts ([`HttpTarget`]).

use rustls::pki_types::ServerName;
use std::net::SocketAddr;

/// A URL taken apart: what to connect to and what to ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// `https://`: the request goes over TLS.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// `http://HOST[:PORT][/PATH]` or `https://...`; HOST may be `[v6]`.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let (tls, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(format!("'{url}' is not an http:// or https:// URL")),
        };
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
            None if tls => 443,
            None => 80,
        };
        if path.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(format!("'{url}': spaces or control characters in the path"));
        }
        Ok(HttpUrl {
            tls,
            host,
            port,
            path: path.to_string(),
        })
    }

    /// 443 for https, 80 for http.
    pub fn default_port(&self) -> u16 {
        if self.tls { 443 } else { 80 }
    }

    /// The Host header's value.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.default_port() {
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
    /// Path and query (HTTP/2 sends it as `:path`).
    pub path: String,
    /// https: the name the certificate is checked against (and sent as SNI); None: cleartext.
    pub tls: Option<ServerName<'static>>,
}

impl HttpTarget {
    /// Fails only for an https URL whose host is no valid TLS server name.
    pub fn new(url: &HttpUrl, addr: SocketAddr, keepalive: bool) -> Result<HttpTarget, String> {
        // As short as HTTP/1.1 allows (keep-alive is its default): every header is work for the
        // server under test.
        let connection = if keepalive { "" } else { "Connection: close\r\n" };
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: linerate\r\n{connection}\r\n",
            url.path,
            url.authority(),
        )
        .into_bytes();
        let tls = match url.tls {
            true => Some(super::tls::server_name(&url.host)?),
            false => None,
        };
        Ok(HttpTarget {
            server: url.authority(),
            addr,
            request,
            path: url.path.clone(),
            tls,
        })
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
        let u = HttpUrl::parse("https://localhost/x").expect("parses");
        assert_eq!((u.tls, u.port, u.authority().as_str()), (true, 443, "localhost"));
        let u = HttpUrl::parse("https://h:80/").expect("parses");
        assert_eq!(u.authority(), "h:80");
        for bad in [
            "ftp://x/",
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
