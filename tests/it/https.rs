//! `linerate http` over TLS: against nginx with TLS 1.2 and 1.3 (its access log's
//! `$ssl_session_reused` is the referee for resumed handshakes), against linerate's own
//! `serve --https-port`, curl against that server, and the handshakes that must fail: an
//! untrusted issuer, a name the certificate is not for, an expired certificate, a server that
//! speaks no TLS, one that says nothing. Every run is bounded; each failure has its class and
//! fails the run (exit 4).

use crate::kinds::*;
use crate::nginx::Nginx;
use crate::util::*;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// A test CA in a tempdir, and leaf certificates it signs.
struct Pki {
    dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "linerate test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA");
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write the CA");
        Pki { dir, ca }
    }

    fn ca(&self) -> String {
        self.path("ca.pem")
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// A leaf for `names` signed by the CA, as `NAME.pem` and `NAME.key`; expired a year ago
    /// when asked.
    fn leaf(&self, name: &str, names: &[&str], expired: bool) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).expect("params");
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = params.signed_by(&key, &self.ca).expect("sign");
        let (c, k) = (self.path(&format!("{name}.pem")), self.path(&format!("{name}.key")));
        std::fs::write(&c, cert.pem()).expect("cert");
        std::fs::write(&k, key.serialize_pem()).expect("key");
        (c, k)
    }
}

/// nginx with TLS 1.2 and 1.3 on a free port, resumption by session cache and tickets, a 1 KiB
/// file, and an access log of `STATUS PROTOCOL REUSED` (`r` or `.`) per request.
fn nginx_tls(cert: &str, key: &str) -> Option<Nginx> {
    let (cert, key) = (cert.to_string(), key.to_string());
    Nginx::start_with("$status $ssl_protocol $ssl_session_reused", move |dir: &Path, _| {
        std::fs::write(dir.join("www/1k.bin"), vec![b'x'; 1024]).expect("1k.bin");
        (
            " ssl".to_string(),
            format!(
                "ssl_certificate {cert}; ssl_certificate_key {key}; ssl_protocols TLSv1.2 TLSv1.3; \
                 ssl_session_cache shared:SSL:1m; ssl_session_tickets on;"
            ),
        )
    })
}

/// (requests logged with status 200 and `protocol`, of which over a reused session).
fn nginx_sessions(nginx: &Nginx, protocol: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(nginx.dir.path().join("access.log")).unwrap_or_default();
    let mut out = (0, 0);
    for line in text.lines() {
        if let ["200", p, reused] = line.split_whitespace().collect::<Vec<_>>()[..]
            && p == protocol
        {
            out.0 += 1;
            out.1 += u64::from(reused == "r");
        }
    }
    out
}

fn http(args: &[&str]) -> std::process::Output {
    let mut full = vec!["http", "--json", "--no-agent", "-d", "1s"];
    full.extend_from_slice(args);
    linerate(&full, LIMIT)
}

#[test]
fn issue_27_nginx_tls_1_2_and_1_3_resumed_handshakes_match_its_log() {
    let pki = Pki::new();
    let (cert, key) = pki.leaf("nginx", &["localhost", "127.0.0.1"], false);
    let Some(nginx) = nginx_tls(&cert, &key) else { return };
    let url = format!("https://localhost:{}/1k.bin", nginx.port);
    let log = nginx.dir.path().join("access.log");
    for (version, protocol) in [("1.2", "TLSv1.2"), ("1.3", "TLSv1.3")] {
        for resume in ["on", "off"] {
            std::fs::write(&log, "").expect("empty the log");
            let ca = pki.ca();
            let args = [
                url.as_str(),
                "--cacert",
                &ca,
                "--tls-version",
                version,
                "--tls-resume",
                resume,
                "--users",
                "4",
            ];
            let v = json_of(&http(&args));
            check_identity(&v);
            let full = u(&v, "/summary/tls/full");
            let resumed = u(&v, "/summary/tls/resumed");
            let responses = u(&v, "/summary/responses");
            assert_eq!(
                u(&v, "/summary/errors/total"),
                0,
                "{version} {resume}: {}",
                v["summary"]["errors"]
            );
            assert!(responses >= 20, "{version} {resume}: {responses} responses");
            assert_eq!(u(&v, "/summary/body_bytes"), responses * 1024);
            // A new connection per request (no --keepalive): one handshake each.
            assert_eq!(full + resumed, u(&v, "/summary/connections/successful"));
            // nginx logs a request once it is done with it, those left in flight included.
            let in_flight = u(&v, "/summary/in_flight_at_end") + u(&v, "/summary/connections/in_flight_at_end");
            poll_until(Duration::from_secs(10), "nginx to log the run", || {
                nginx_sessions(&nginx, protocol).0 >= responses
            });
            let (logged, reused) = nginx_sessions(&nginx, protocol);
            assert!(
                logged >= responses && logged <= responses + in_flight,
                "{version} {resume}: nginx logged {logged} {protocol} requests, linerate {responses} (+{in_flight})"
            );
            if resume == "off" {
                assert_eq!((resumed, reused), (0, 0), "{version}: resumption off");
            } else {
                // Each user's first handshake is full, its later ones resumed.
                assert!(full >= 1 && full <= 4 + in_flight, "{version}: {full} full handshakes");
                assert!(
                    reused >= resumed && reused <= resumed + in_flight,
                    "{version}: nginx saw {reused} reused sessions, linerate counted {resumed} resumed"
                );
                assert!(resumed + 4 >= responses, "{version}: {resumed} resumed of {responses}");
            }
            let t = &v["summary"]["tls"];
            assert!(t["full_time_us"]["p50"].as_f64().is_some_and(|x| x > 0.0), "{t}");
            assert!(t["cpu_us_per_full_handshake"].as_f64().is_some_and(|x| x > 0.0), "{t}");
        }
    }
}

#[test]
fn issue_27_keepalive_over_tls_makes_one_handshake_per_user() {
    let pki = Pki::new();
    let (cert, key) = pki.leaf("nginx", &["localhost"], false);
    let Some(nginx) = nginx_tls(&cert, &key) else { return };
    let url = format!("https://localhost:{}/1k.bin", nginx.port);
    let ca = pki.ca();
    let v = json_of(&http(&[&url, "--cacert", &ca, "--users", "3", "--keepalive"]));
    assert!(u(&v, "/summary/responses") > 50);
    assert_eq!(u(&v, "/summary/tls/full") + u(&v, "/summary/tls/resumed"), 3);
    assert_eq!(u(&v, "/summary/errors/total"), 0);
}

#[test]
fn issue_27_linerates_own_https_server_and_curl() {
    let pki = Pki::new();
    let (cert, key) = pki.leaf("serve", &["localhost", "127.0.0.1"], false);
    let agent = Agent::start(&["--https-port", "0", "--cert", &cert, "--key", &key]);
    let https = agent.https_addr.clone().expect("https address");
    let port = port_of(&https);
    let url = format!("https://localhost:{port}/bytes/1024");
    let ca = pki.ca();
    let v = json_of(&linerate(
        &[
            "http",
            "--json",
            "-d",
            "1s",
            &url,
            "--cacert",
            &ca,
            "--users",
            "4",
            "--agent",
            &agent.addr,
        ],
        LIMIT,
    ));
    check_identity(&v);
    let responses = u(&v, "/summary/responses");
    assert!(responses >= 20, "{responses}");
    assert_eq!(u(&v, "/summary/body_bytes"), responses * 1024);
    assert_eq!(u(&v, "/summary/errors/total"), 0);
    assert!(u(&v, "/summary/tls/resumed") > 0, "{}", v["summary"]["tls"]);
    assert!(
        v["summary"]["server"]["cpu"]["host_percent"].is_number(),
        "{}",
        v["summary"]["server"]
    );
    // curl with the CA, TLS 1.2 and 1.3, and a body across many records.
    if on_path("curl") {
        for tls in ["--tlsv1.2", "--tlsv1.3"] {
            let out = Command::new("curl")
                .args(["-sS", "--max-time", "10", "--cacert", &ca, tls])
                .arg(format!("https://localhost:{port}/bytes/200000"))
                .output()
                .expect("curl");
            assert!(
                out.status.success(),
                "curl {tls}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.stdout.len(), 200_000, "curl {tls}");
            let pattern = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-\n";
            assert!(out.stdout.iter().enumerate().all(|(i, b)| *b == pattern[i % 64]));
        }
    }
}

#[test]
fn issue_27_a_generated_certificate_is_printed_and_served() {
    let agent = Agent::start(&["--https-port", "0"]);
    let https = agent.https_addr.clone().expect("https address");
    let v = json_of(&http(&[
        &format!("https://{https}/bytes/100"),
        "--insecure",
        "--users",
        "2",
    ]));
    assert!(u(&v, "/summary/responses") > 0);
    if on_path("curl") {
        let out = Command::new("curl")
            .args(["-sSk", "--max-time", "10"])
            .arg(format!("https://{https}/bytes/10"))
            .output()
            .expect("curl");
        assert_eq!(out.stdout, b"0123456789", "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A run whose every handshake fails: exit 4, the document says which class, and the failures
/// are the unsuccessful connections.
fn failing(url: &str, extra: &[&str], class: &str) -> Value {
    let mut args = vec![url, "--users", "2", "--timeout", "500ms"];
    args.extend_from_slice(extra);
    let v = json_with_status(&http(&args), 4);
    check_identity(&v);
    let e = &v["summary"]["errors"];
    let n = u(&v, &format!("/summary/errors/{class}"));
    assert!(n > 0, "{url}: no {class} errors: {e}");
    assert_eq!(u(&v, "/summary/errors/total"), n, "{url}: other classes: {e}");
    assert_eq!(u(&v, "/summary/tls/failed"), n);
    assert_eq!(u(&v, "/summary/connections/unsuccessful"), n);
    assert_eq!(u(&v, "/summary/tls/handshakes"), 0);
    v
}

#[test]
fn issue_27_bad_certificates_fail_as_certificate_errors() {
    let pki = Pki::new();
    let ca = pki.ca();
    // An issuer the client does not trust (the server's own generated certificate), a
    // certificate for another name than the URL's (sent as SNI), an expired one.
    let other = pki.leaf("other", &["other.example"], false);
    let expired = pki.leaf("expired", &["localhost"], true);
    for files in [None, Some(&other), Some(&expired)] {
        let mut args = vec!["--https-port", "0"];
        if let Some((cert, key)) = files {
            args.extend(["--cert", cert.as_str(), "--key", key.as_str()]);
        }
        let agent = Agent::start(&args);
        let port = port_of(agent.https_addr.as_deref().expect("https"));
        let url = format!("https://localhost:{port}/bytes/1");
        failing(&url, &["--cacert", &ca], "tls_certificate");
        // Not checked, the same certificate serves.
        let v = json_of(&http(&[&url, "--insecure"]));
        assert!(u(&v, "/summary/responses") > 0);
    }
}

#[test]
fn issue_27_a_server_without_tls_fails_as_protocol_or_timeout() {
    // linerate's cleartext port answers the ClientHello with an HTTP 400: not TLS.
    let agent = Agent::start(&["--http-port", "0"]);
    let addr = agent.http_addr.clone().expect("http");
    failing(&format!("https://{addr}/bytes/1"), &["--insecure"], "tls_protocol");
    // A port that accepts and says nothing: the handshake times out.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    failing(&format!("https://127.0.0.1:{port}/"), &["--insecure"], "tls_timeout");
    drop(silent);
}

#[test]
fn issue_27_serve_https_flags_are_checked() {
    let t = Duration::from_secs(20);
    // --cert and --key go together, and with --https-port: usage errors (exit 2).
    for args in [
        vec!["serve", "--port", "0", "--cert", "/x.pem", "--key", "/x.key"],
        vec!["serve", "--port", "0", "--https-port", "0", "--cert", "/x.pem"],
        vec!["serve", "--port", "0", "--https-port", "0", "--key", "/x.key"],
    ] {
        let out = linerate(&args, t);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    // Files that cannot be read: one line naming the file, before anything listens.
    fails_with(
        &[
            "serve",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--https-port",
            "0",
            "--cert",
            "/nonexistent/c.pem",
            "--key",
            "/nonexistent/k.pem",
        ],
        "cannot read /nonexistent/c.pem",
        t,
    );
    // https flags of the client without an https URL.
    fails_with(
        &["http", "http://127.0.0.1:1/", "--insecure", "-d", "1s"],
        "--insecure applies to https:// URLs",
        t,
    );
}

/// The usual one-line self-signed certificate (`openssl req -x509`, which marks it
/// CA:TRUE and gives it no subjectAltName) given with `--cacert` is trusted as curl trusts it:
/// it is exactly the certificate given, its dates hold and the URL's host is its CN. Its name
/// and dates are still checked (an IP URL, an expired one), and the first refusal's reason is
/// in the run's notes with the fix.
#[test]
fn issue_38_an_openssl_req_x509_certificate_given_with_cacert_is_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (Debian: openssl; .ci/run installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let agent = Agent::start(&["--https-port", "0", "--cert", &cert, "--key", &key]);
    let port = port_of(agent.https_addr.as_deref().expect("https"));
    let url = format!("https://localhost:{port}/bytes/100");
    // curl takes it (the reference), and so does linerate.
    if on_path("curl") {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--cacert", &cert, &url])
            .output()
            .expect("curl");
        assert!(out.status.success(), "curl: {}", String::from_utf8_lossy(&out.stderr));
    }
    let v = json_of(&http(&[&url, "--cacert", &cert, "--users", "2"]));
    assert!(u(&v, "/summary/responses") > 0, "{}", v["notes"]);
    assert_eq!(u(&v, "/summary/errors/total"), 0, "{}", v["notes"]);
    // The same certificate for a URL by address: not its name. The refusal says why, once.
    let v = failing(
        &format!("https://127.0.0.1:{port}/bytes/100"),
        &["--cacert", &cert],
        "tls_certificate",
    );
    let notes = v["notes"].to_string();
    assert_eq!(
        notes.matches("the server's certificate was refused").count(),
        1,
        "{notes}"
    );
    assert!(notes.contains("it is not for '127.0.0.1'"), "{notes}");
    // Another CA given, this certificate served: it is a CA's certificate, not one of those
    // given, and the note says what to give.
    let other = Pki::new();
    let v = failing(&url, &["--cacert", &other.ca()], "tls_certificate");
    assert!(
        v["notes"].to_string().contains(
            "it is a CA certificate (CA:TRUE) used as a server's (give exactly this certificate with --cacert"
        ),
        "{}",
        v["notes"]
    );
    // An expired CA:TRUE certificate with its name in the CN only, given and served: its dates
    // are checked.
    let key_pair = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, "localhost");
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let expired = params.self_signed(&key_pair).expect("sign");
    let (ec, ek) = (dir.path().join("e.pem"), dir.path().join("e.key"));
    std::fs::write(&ec, expired.pem()).expect("cert");
    std::fs::write(&ek, key_pair.serialize_pem()).expect("key");
    let (ec, ek) = (ec.display().to_string(), ek.display().to_string());
    let old = Agent::start(&["--https-port", "0", "--cert", &ec, "--key", &ek]);
    let old_port = port_of(old.https_addr.as_deref().expect("https"));
    let v = failing(
        &format!("https://localhost:{old_port}/bytes/100"),
        &["--cacert", &ec],
        "tls_certificate",
    );
    assert!(v["notes"].to_string().contains("it has expired"), "{}", v["notes"]);
}
