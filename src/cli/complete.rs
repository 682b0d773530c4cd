//! `linerate completions SHELL` and `linerate man`: the shell completion script and the roff man
//! page, both generated from the same clap definitions as the parser (clap_complete,
//! clap_mangen), so they cannot drift from the flags. In: the shell asked for; out: text on
//! stdout.

use super::Cli;
use clap::CommandFactory;
use std::io::Write;

/// `linerate completions SHELL`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  linerate completions bash > /etc/bash_completion.d/linerate\n  linerate completions zsh > \"${fpath[1]}/_linerate\"\n  linerate completions fish > ~/.config/fish/completions/linerate.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// The completion script for `shell`, on stdout.
pub fn print_completions(shell: clap_complete::Shell) -> std::io::Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "linerate", &mut script);
    write_out(&script)
}

/// The man page (roff, section 1) of `linerate` and its subcommands, on stdout.
pub fn print_man() -> std::io::Result<()> {
    let cmd = Cli::command();
    let mut page = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    man.render(&mut page)?;
    // One page for the whole tool: each subcommand follows as a section of its own, its
    // synopsis and its flags as subsections (clap_mangen renders each as a top-level section).
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        let man = clap_mangen::Man::new(sub.clone().bin_name(format!("linerate {name}")));
        let mut part = Vec::new();
        man.render_synopsis_section(&mut part)?;
        man.render_options_section(&mut part)?;
        let part = String::from_utf8_lossy(&part)
            .replace(
                ".SH SYNOPSIS",
                &format!(".SH \"LINERATE {}\"\n.SS Synopsis", name.to_uppercase()),
            )
            .replace(".SH OPTIONS", ".SS Options");
        page.extend_from_slice(part.as_bytes());
    }
    write_out(&page)
}

fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}
