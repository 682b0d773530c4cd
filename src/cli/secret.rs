//! `linerate secret`: a fleet's shared secret, fresh from the operating system's random source.

#[derive(Debug, clap::Args)]
pub struct SecretArgs {
    #[command(subcommand)]
    pub command: SecretCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SecretCommand {
    /// Print a fresh random secret (32 bytes as 64 hex digits), or a Kubernetes Secret holding one
    ///
    /// The bytes come from the kernel's random source (getrandom). Give the printed text to every
    /// agent and client of a fleet: `--secret-file` or LINERATE_SECRET. With --kubernetes NAME
    /// the output is a Secret manifest whose key `secret` holds it, ready for
    /// `kubectl apply -f -`; the manifests in deploy/kubernetes mount `linerate-secret`.
    /// Example: linerate secret new --kubernetes linerate-secret | kubectl apply -f -
    New {
        /// Print a Kubernetes Secret manifest named NAME rather than the bare secret
        #[arg(long, value_name = "NAME")]
        kubernetes: Option<String>,

        /// The Secret's namespace (with --kubernetes)
        #[arg(long, value_name = "NS", default_value = "linerate", requires = "kubernetes")]
        namespace: String,
    },
}
