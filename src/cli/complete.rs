//! `linerate completions SHELL` and `linerate man`: the shell completion script and the roff man
//! pages, both generated from the same clap definitions as the parser (clap_complete,
//! clap_mangen), so they cannot drift from the flags. In: the shell asked for, or where the
//! pages go; out: text on stdout, or a page per command in a directory.

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

/// `linerate man`: one page on stdout, or a page per command into a directory.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  linerate man | man -l -\n  linerate man --dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write a page per command into DIR (linerate.1, linerate-tcp.1, linerate-plan-check.1, ...)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// `linerate man`: the pages asked for, each path printed when written to a directory.
pub fn man(args: &ManArgs) -> std::io::Result<()> {
    let Some(dir) = &args.dir else {
        return write_out(&one_page()?);
    };
    std::fs::create_dir_all(dir)?;
    // Every command's own page, named as the pages that list it refer to it
    // (`linerate-plan(1)` lists `linerate-plan-check(1)`); no `help` page.
    clap_mangen::generate_to(Cli::command(), dir)?;
    let mut written: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linerate") && n.ends_with(".1"))
        })
        .collect();
    written.sort();
    let list: String = written.iter().map(|p| format!("{}\n", p.display())).collect();
    write_out(list.as_bytes())
}

/// The man page (roff, section 1) of `linerate` and all its commands: each command, nested ones
/// too (`plan check`), follows as a section of its own with its synopsis and flags. The list of
/// commands names those sections, not `linerate-tcp(1)` pages (`man --dir` writes those).
fn one_page() -> std::io::Result<Vec<u8>> {
    let cmd = Cli::command().disable_help_subcommand(true);
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    let mut page = String::from_utf8_lossy(&page).into_owned();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        page = page.replace(
            &format!("linerate\\-{}(1)", name.replace('-', "\\-")),
            &format!(
                "\\fBlinerate {name}\\fR (section LINERATE {} below)",
                name.to_uppercase()
            ),
        );
    }
    sections(&cmd, "linerate", &mut page)?;
    Ok(page.into_bytes())
}

/// The sections of `cmd`'s subcommands, named by their whole command line (`linerate plan
/// check`), each with its synopsis and flags (clap_mangen renders each as a top-level section).
fn sections(cmd: &clap::Command, path: &str, page: &mut String) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let line = format!("{path} {}", sub.get_name());
        let man = clap_mangen::Man::new(sub.clone().bin_name(&line).disable_help_subcommand(true));
        let mut part = Vec::new();
        man.render_synopsis_section(&mut part)?;
        man.render_options_section(&mut part)?;
        page.push_str(
            &String::from_utf8_lossy(&part)
                // A help heading (`Results store`) is a subsection of the command's section too.
                .replace(".SH ", ".SS ")
                .replace(
                    ".SS SYNOPSIS",
                    &format!(".SH \"{}\"\n.SS Synopsis", line.to_uppercase()),
                )
                .replace(".SS OPTIONS", ".SS Options"),
        );
        sections(sub, &line, page)?;
    }
    Ok(())
}

fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}
