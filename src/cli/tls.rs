//! The client's TLS flags (`--insecure`, `--cacert`, `--tls-version`, `--tls-resume`), one group
//! for every command that speaks https: `http` and `rpm`.

use super::usage::{Usage, usage};
use linerate_core::spec::{TlsSpec, TlsVersion};

#[derive(Debug, Clone, clap::Args)]
pub struct TlsArgs {
    /// https: accept any server certificate (signatures are still checked)
    #[arg(long, help_heading = "TLS (https:// URLs)")]
    pub insecure: bool,

    /// https: trust the CA certificates in this PEM file (default: the system's)
    ///
    /// Default: /etc/ssl/certs/ca-certificates.crt. Example: --cacert ca.pem
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "TLS (https:// URLs)",
        conflicts_with = "insecure"
    )]
    pub cacert: Option<std::path::PathBuf>,

    /// https: offer only this TLS version, 1.2 or 1.3 (default: both)
    #[arg(long, value_name = "1.2|1.3", value_parser = tls_version, help_heading = "TLS (https:// URLs)")]
    pub tls_version: Option<TlsVersion>,

    /// https: resume TLS sessions, each user its own, as a browser does (on, off)
    ///
    /// Default: on. A user's later connections to a server resume its session (a TLS 1.3
    /// ticket, a TLS 1.2 ticket or session ID) when the server allows; off: every handshake is
    /// full. Example: --tls-resume off
    #[arg(long, value_name = "on|off", value_parser = on_off, help_heading = "TLS (https:// URLs)")]
    pub tls_resume: Option<bool>,
}

impl TlsArgs {
    /// The first TLS flag given, for the refusal of TLS flags without https.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            (self.insecure, "--insecure"),
            (self.cacert.is_some(), "--cacert"),
            (self.tls_version.is_some(), "--tls-version"),
            (self.tls_resume.is_some(), "--tls-resume"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The TLS asked for, its files read and checked here (a bad --cacert is a usage error).
    pub fn spec(&self) -> Result<TlsSpec, Usage> {
        let tls = TlsSpec {
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            version: self.tls_version,
            resume: self.tls_resume.unwrap_or(true),
        };
        linerate_core::client::tls_client_config(&tls, &Default::default())
            .map_err(|e| usage!("{:#}", anyhow::Error::from(e)))?;
        Ok(tls)
    }
}

fn tls_version(s: &str) -> Result<TlsVersion, String> {
    match s {
        "1.2" => Ok(TlsVersion::V1_2),
        "1.3" => Ok(TlsVersion::V1_3),
        _ => Err(format!("'{s}' is not a TLS version: 1.2 or 1.3")),
    }
}

fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{s}' is neither on nor off")),
    }
}
