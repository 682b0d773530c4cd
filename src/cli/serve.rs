//! `linerate serve`: where the agent listens and whom it lets in.

use super::SecretArgs;
use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
// The HTTP flags need a server to apply to: --http-port, --https-port or both.
#[command(group(clap::ArgGroup::new("http_server").args(["http_port", "https_port"]).multiple(true)))]
pub struct ServeArgs {
    /// Address to listen on (IPv4 or IPv6); :: listens on both
    #[arg(short = 'B', long, value_name = "ADDR", default_value_t = IpAddr::V6(Ipv6Addr::UNSPECIFIED))]
    pub bind: IpAddr,

    /// Port for control and data connections (0 = any free port, printed at start)
    #[arg(short = 'p', long, value_name = "N", default_value_t = linerate_core::client::DEFAULT_PORT)]
    pub port: u16,

    /// Serve without a secret on a non-loopback address (anyone who reaches it can run tests)
    #[arg(long)]
    pub no_auth: bool,

    /// Tests run at once; past this a client is told the agent is busy
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_tests: u16,

    /// Memory all running tests may take at once (e.g. 2G); a test that does not fit is refused
    ///
    /// Every test's buffers (length x depth x streams), the socket buffers it asks for and its
    /// receivers' maps are counted before it is accepted. Default: a quarter of the host's memory,
    /// at most 4 GiB. Example: --max-memory 512M
    #[arg(long, value_name = "BYTES")]
    pub max_memory: Option<linerate_core::units::ByteSize>,

    /// How long no byte may move before a test is given up (default 30s; for tests of the agent)
    #[arg(long, value_name = "DURATION", hide = true)]
    pub idle: Option<linerate_core::units::TimeSpan>,

    /// Take part in multicast UDP tests to this group (repeatable); others are refused
    #[arg(long = "join", value_name = "GROUP", value_parser = multicast_group)]
    pub joins: Vec<IpAddr>,

    /// Answer HTTP/1.1 on this port too: GET /bytes/N and /files/NAME
    ///
    /// Off unless given. `GET /bytes/N` returns N bytes (up to 2^40) from memory; `--file PATH`
    /// is served at /files/BASENAME with sendfile. Keep-alive as HTTP/1.1 says; 0 = any free
    /// port, printed at start. Example: --http-port 8080
    #[arg(long, value_name = "N")]
    pub http_port: Option<u16>,

    /// Serve this file at /files/BASENAME on the HTTP and HTTPS ports (repeatable)
    ///
    /// Opened once at start; its size then is the Content-Length. Example: --file /srv/512k.bin
    #[arg(long = "file", value_name = "PATH", requires = "http_server")]
    pub files: Vec<PathBuf>,

    /// Seconds an HTTP request head may take to arrive whole, however it trickles
    ///
    /// Counted from its first byte (a new connection's first head: from accept); past it the
    /// connection is closed. Example: --http-head-timeout 10
    #[arg(long, value_name = "SECONDS", default_value = "10", requires = "http_server",
          allow_hyphen_values = true, value_parser = super::common::positive_time)]
    pub http_head_timeout: linerate_core::units::TimeSpan,

    /// Seconds an HTTP connection or HTTP/2 stream may make no progress before it is closed
    ///
    /// A keep-alive connection between requests, and a response its client reads nothing of, are
    /// closed after this; an HTTP/2 stream that could send nothing of its response (its window
    /// kept at zero) is reset, and its connection closed when no stream is left.
    /// Example: --http-idle-timeout 60
    #[arg(long, value_name = "SECONDS", default_value = "60", requires = "http_server",
          allow_hyphen_values = true, value_parser = super::common::positive_time)]
    pub http_idle_timeout: linerate_core::units::TimeSpan,

    /// HTTP connections open at once from one IP address (0 = no limit)
    ///
    /// Past it that address's new connections are closed at accept, so one address cannot
    /// take the server's descriptors. Example: --http-max-per-address 1000
    #[arg(long, value_name = "N", default_value_t = linerate_core::httpd::MAX_CONNECTIONS_PER_ADDRESS, requires = "http_server")]
    pub http_max_per_address: usize,

    /// Answer HTTPS (HTTP/1.1 over TLS 1.2 or 1.3) on this port too, the same routes
    ///
    /// Off unless given. A self-signed certificate for localhost, 127.0.0.1, ::1 and this
    /// host's name is made at start (its SHA-256 fingerprint is printed), unless --cert and
    /// --key give one. Sessions resume by ticket or session ID. Example: --https-port 8443
    #[arg(long, value_name = "N")]
    pub https_port: Option<u16>,

    /// The https port's certificate chain (PEM, the server's first); needs --key
    #[arg(long, value_name = "FILE", requires_all = ["https_port", "key"])]
    pub cert: Option<PathBuf>,

    /// The https port's private key (PEM: PKCS#8, PKCS#1 or SEC1); needs --cert
    #[arg(long, value_name = "FILE", requires_all = ["https_port", "cert"])]
    pub key: Option<PathBuf>,

    /// A command a client may ask to run around its test: NAME=COMMAND, NAME.undo=COMMAND (repeatable)
    ///
    /// For A/B tests of this host's configuration. A client's `--profile NAME` runs COMMAND
    /// (`sh -c`, as this agent's user, killed after 60 s) before its test and NAME.undo after;
    /// the result records both, with their exit status and output. A failing command refuses the
    /// test. The agent runs no other command. Names: letters, digits, '-' and '_'.
    /// Example: --profile 'mtu9000=ip link set dev eth1 mtu 9000' --profile 'mtu9000.undo=ip link set dev eth1 mtu 1500'
    #[arg(long = "profile", value_name = "NAME=COMMAND")]
    pub profiles: Vec<String>,

    /// The node this agent runs on, for a fleet's --different-nodes (default: $LINERATE_NODE)
    ///
    /// Told to a controller with the agent's clock. In Kubernetes, set LINERATE_NODE
    /// from the downward API (spec.nodeName). Example: --node-name rack3-n12
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,

    /// Pretend this agent's wall clock is off by this many milliseconds (tests of clock estimates)
    #[arg(
        long,
        value_name = "MS",
        hide = true,
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    pub pretend_clock_offset_ms: i64,

    /// Serve the agent's counters for Prometheus on GET /metrics at ADDR:PORT (OpenMetrics)
    ///
    /// Tests accepted and refused, bytes and datagrams moved, test durations, handshake
    /// failures, profile runs: docs/metrics.md. Unauthenticated: bind it to a private or
    /// loopback address. Port 0: any free port, printed at start. Example: --metrics 10.0.0.5:9464
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,

    /// Answer `iperf3 -c` on this port too (loopback only without --iperf3-allow)
    ///
    /// TCP and UDP, -P, -R, --bidir, -t/-n/-k, -l, -w, -b, -O; one test at a time (a second
    /// client is told the server is busy), under this agent's limits. iperf3's protocol has no
    /// authentication: the port binds to 127.0.0.1 and ::1 unless --iperf3-allow names who may
    /// use it (docs/security.md). 0 = any free port, printed at start. Example: --iperf3-port 5201
    #[arg(long, value_name = "N")]
    pub iperf3_port: Option<u16>,

    /// Who may use the iperf3 port: ADDR/PREFIX (repeatable)
    ///
    /// With it the iperf3 port binds to --bind's address and closes at once any connection
    /// from outside every block given. Example: --iperf3-allow 10.1.0.0/16
    #[arg(long = "iperf3-allow", value_name = "CIDR", requires = "iperf3_port",
          value_parser = |s: &str| s.parse::<linerate_core::agent::Cidr>())]
    pub iperf3_allow: Vec<linerate_core::agent::Cidr>,

    /// Store each iperf3 client's test in this results database
    ///
    /// Off unless given: the agent keeps no store of its own; `linerate results --db PATH` reads
    /// it. Example: --db /var/lib/linerate/results.db
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub secret: SecretArgs,
}

/// `--join`: a multicast group address, refused otherwise (joining it would fail at test time).
fn multicast_group(s: &str) -> Result<IpAddr, String> {
    let ip: IpAddr = s.parse().map_err(|e| format!("{e}"))?;
    if ip.is_multicast() {
        Ok(ip)
    } else {
        Err(format!("{ip} is not a multicast group (224.0.0.0/4 or ff00::/8)"))
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn serve(args: &[&str]) -> super::ServeArgs {
        let mut full = vec!["linerate", "serve"];
        full.extend_from_slice(args);
        match Cli::try_parse_from(full).expect("parses").command {
            Command::Serve(s) => s,
            _ => panic!("not serve"),
        }
    }

    #[test]
    fn max_memory_takes_a_size_and_idle_a_time() {
        assert_eq!(serve(&[]).max_memory, None);
        assert_eq!(serve(&["--max-memory", "2G"]).max_memory.map(|b| b.0), Some(2 << 30));
        assert_eq!(serve(&["--max-memory=512M"]).max_memory.map(|b| b.0), Some(512 << 20));
        assert!(Cli::try_parse_from(["linerate", "serve", "--max-memory", "lots"]).is_err());
        assert_eq!(
            serve(&["--idle", "2s"]).idle.map(|t| t.0),
            Some(std::time::Duration::from_secs(2))
        );
    }

    #[test]
    fn issue_26_iperf3_flags_take_a_port_and_address_blocks() {
        let s = serve(&[
            "--iperf3-port",
            "0",
            "--iperf3-allow",
            "10.1.2.3/16",
            "--iperf3-allow=::1",
        ]);
        assert_eq!(s.iperf3_port, Some(0));
        let shown: Vec<String> = s.iperf3_allow.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["10.1.0.0/16", "::1/128"]);
        assert!(s.iperf3_allow[0].contains("10.1.200.7".parse().expect("ip")));
        assert!(s.iperf3_allow[0].contains("::ffff:10.1.0.1".parse().expect("ip")));
        assert!(!s.iperf3_allow[0].contains("10.2.0.1".parse().expect("ip")));
        for bad in [
            &["--iperf3-port", "1", "--iperf3-allow", "10.0.0.0/33"][..],
            &["--iperf3-port", "1", "--iperf3-allow", "ten"],
            &["--iperf3-allow", "10.0.0.0/8"],
        ] {
            let mut full = vec!["linerate", "serve"];
            full.extend_from_slice(bad);
            assert!(Cli::try_parse_from(full).is_err(), "{bad:?}");
        }
        let all = serve(&["--iperf3-port", "1", "--iperf3-allow", "0.0.0.0/0"]);
        assert!(all.iperf3_allow[0].contains("192.0.2.1".parse().expect("ip")));
        assert_eq!(
            serve(&["--db", "x.db"]).db.as_deref(),
            Some(std::path::Path::new("x.db"))
        );
    }

    #[test]
    fn issue_16_profiles_are_repeatable_and_checked_by_the_agent() {
        let s = serve(&[
            "--profile",
            "toe-on=ethtool -K eth0 tso on",
            "--profile=toe-on.undo=true",
        ]);
        let p = linerate_core::agent::Profiles::parse(&s.profiles).expect("valid");
        assert_eq!(p.names(), ["toe-on"]);
        assert_eq!(p.get("toe-on").and_then(|t| t.undo.as_deref()), Some("true"));
        let bad = serve(&["--profile", "x.undo=true"]);
        assert!(linerate_core::agent::Profiles::parse(&bad.profiles).is_err());
    }
}
