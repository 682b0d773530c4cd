//! `linerate secret new`: a fresh shared secret, bare or as a Kubernetes Secret manifest.

use crate::cli::secret::{SecretArgs, SecretCommand};
use crate::cli::usage::usage;
use std::io::Write;
use std::process::ExitCode;

pub fn command(args: &SecretArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        SecretCommand::New { kubernetes, namespace } => {
            let secret = linerate_core::agent::fresh_secret();
            let text = match kubernetes {
                Some(name) => manifest(name, namespace, &secret)?,
                None => format!("{secret}\n"),
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A Secret manifest named `name` in `namespace` (both checked as Kubernetes names, so nothing
/// the user types can break the YAML), its key `secret` holding `secret` (hex digits).
fn manifest(name: &str, namespace: &str, secret: &str) -> anyhow::Result<String> {
    check_name("--kubernetes", name, 253, true)?;
    check_name("--namespace", namespace, 63, false)?;
    Ok(format!(
        "# The fleet's shared secret: every agent and client of the fleet needs it.\n\
             apiVersion: v1\n\
             kind: Secret\n\
             metadata:\n  name: {name}\n  namespace: {namespace}\n  \
             labels:\n    app.kubernetes.io/name: linerate\n\
             type: Opaque\n\
             stringData:\n  secret: \"{secret}\"\n"
    ))
}

/// A DNS-1123 label (`dots` false) or subdomain (`dots` true) of at most `max` characters, as
/// Kubernetes requires of object names and namespaces.
fn check_name(flag: &str, name: &str, max: usize, dots: bool) -> anyhow::Result<()> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let ok = name.len() <= max
        && if dots {
            name.split('.').all(label_ok)
        } else {
            label_ok(name)
        };
    if !ok {
        let what = if dots { "a DNS subdomain" } else { "a DNS label" };
        return Err(usage!(
            "{flag} '{}': not a Kubernetes name ({what}: lower-case letters, digits and '-', at most {max} characters)",
            name.escape_debug()
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_25_fresh_secrets_differ_and_fill_every_byte() {
        let (a, b) = (
            linerate_core::agent::fresh_secret(),
            linerate_core::agent::fresh_secret(),
        );
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn issue_25_names_are_checked() {
        assert!(manifest("linerate-secret", "linerate", "00").is_ok());
        assert!(manifest("a.b-c", "ns1", "00").is_ok());
        for (name, ns) in [
            ("Bad", "linerate"),
            ("x", "a.b"),
            ("-x", "ns"),
            ("x", ""),
            ("x\n: y", "ns"),
        ] {
            let err = manifest(name, ns, "00").unwrap_err();
            assert!(crate::cli::usage::is_usage(&err), "{name:?} {ns:?}");
        }
        let yaml = manifest("s", "n", "00ff").unwrap();
        assert!(
            yaml.contains("  name: s\n  namespace: n\n") && yaml.contains("  secret: \"00ff\"\n"),
            "{yaml}"
        );
    }
}
