//! The house rules of docs/architecture.md, checked on the source text so they stay true:
//! engines never import each other, the result document's types import nothing above them,
//! the binary holds no protocol or engine logic, no source file grows past 800 lines without
//! saying why in its opening comment, no two files of core or results import each
//! other, even round a longer circle, and the crates keep their direction: the measuring core
//! links nothing of the results side, no library prints, the wire crate does no I/O,
//! and the report and results crates link the wire crate, never core (outside their tests). The tests keep their
//! split: nothing under tests/it shapes a lab link or takes the timed target's lock,
//! and every test under tests/timed is written `#[apply(timed!)]`, which runs it alone. The
//! halves stay apart: the agent reaches the client only through the relay (the one allowed
//! crossing), the server never imports the client's engine, and the runner and `EngineError`
//! name no engine.
//!
//! The checks read `use` paths as text (no parser): a path is a run of identifiers joined by
//! `::`, and a brace group after `engine::` or `super::` is looked into, so both
//! `use super::tcp::Gate` and `use crate::engine::{pin, udp}` are seen. The circle check
//! tokenizes a little further (comments and literals blanked, inline `mod` blocks followed);
//! see [`file_graph`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

mod style;

const ENGINES: [&str; 4] = ["tcp", "udp", "rr", "http"];
const MAX_LINES: usize = 800;
/// What a long file's `//!` comment must contain to be allowed past [`MAX_LINES`].
const LONG_NOTE: &str = "longer than 800 lines";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The source without `//` comments (doc comments name modules freely).
fn code_of(path: &Path) -> String {
    code_of_text(&fs::read_to_string(path).expect("a source file is readable"))
}

/// The names that follow `prefix::` in `code`: a single name, or every name of a `{...}` group.
fn names_after(code: &str, prefix: &str) -> Vec<String> {
    let needle = format!("{prefix}::");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find(&needle) {
        let at = from + i;
        from = at + needle.len();
        // `prefix` must start at an identifier boundary (`xengine::` is not `engine::`).
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            out.extend(
                group[..end]
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map(str::to_string),
            );
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(name);
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn no_engine_imports_another_engine() {
    let engine = root().join("crates/core/src/engine");
    let mut found = Vec::new();
    for kind in ENGINES {
        let mut files = rust_files(&engine.join(kind));
        let single = engine.join(format!("{kind}.rs"));
        if single.exists() {
            files.push(single);
        }
        for f in files {
            let code = code_of(&f);
            for prefix in ["engine", "super"] {
                for name in names_after(&code, prefix) {
                    if ENGINES.contains(&name.as_str()) && name != kind {
                        found.push(format!("{} names engine `{name}` through `{prefix}::`", rel(&f)));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "engines import each other:\n{}", found.join("\n"));
}

/// Socket options of data sockets are set in the base alone: no engine, client or agent
/// file calls setsockopt, or the socket2/std setters of a data socket's options, itself.
#[test]
fn socket_options_are_set_in_the_base_only() {
    let core = root().join("crates/core/src");
    let setters = [
        "setsockopt(",
        "set_nodelay(",
        "set_tcp_nodelay(",
        "set_linger(",
        "set_recv_buffer_size(",
        "set_send_buffer_size(",
        "set_multicast_",
        "join_multicast_",
        "set_busy_poll(",
        "set_mss(",
    ];
    let mut found = Vec::new();
    for dir in ["engine", "client", "agent"] {
        for f in rust_files(&core.join(dir)) {
            let path = rel(&f);
            if path.contains("engine/sockopt/") {
                continue;
            }
            let code = code_of(&f);
            // Tests may set what they check; the shipped code may not.
            let shipped = code.split("#[cfg(test)]").next().unwrap_or("");
            for setter in setters {
                if shipped.contains(setter) {
                    found.push(format!("{path} calls {setter}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "socket options outside engine/sockopt/ (add what is needed to the base):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_result_types_import_nothing_above_them() {
    let result = root().join("crates/wire/src/result");
    let files = rust_files(&result);
    assert!(!files.is_empty(), "crates/wire/src/result/ holds the document's types");
    let above = ["engine", "summary", "proto", "client", "agent", "sweep", "store"];
    let mut found = Vec::new();
    for f in files {
        let code = code_of(&f);
        for name in names_after(&code, "crate") {
            if above.contains(&name.as_str()) {
                found.push(format!("{} uses crate::{name}", rel(&f)));
            }
        }
        if code.contains("super::super::") {
            found.push(format!("{} reaches out of result/ through super::super", rel(&f)));
        }
    }
    assert!(found.is_empty(), "result/ imports from above it:\n{}", found.join("\n"));
}

#[test]
fn the_binary_holds_no_protocol_or_engine_logic() {
    let mut found = Vec::new();
    for f in rust_files(&root().join("src")) {
        let code = code_of(&f);
        for name in names_after(&code, "linerate_core") {
            if ["proto", "engine", "codec"].contains(&name.as_str()) {
                found.push(format!("{} uses linerate_core::{name}", rel(&f)));
            }
        }
        for raw in ["TcpListener", "UdpSocket", "socket2::"] {
            if code.contains(raw) {
                found.push(format!("{} opens sockets itself ({raw})", rel(&f)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "src/ should only parse, dispatch and render:\n{}",
        found.join("\n")
    );
}

/// Why `code` (one agent file, comments stripped) reaches into the client's half, if it does:
/// the agent runs a client's half only as a relay.
fn client_crossing(code: &str) -> Option<String> {
    let in_crate = names_after(code, "crate::client");
    let from_sibling = names_after(code, "super::super::client");
    in_crate
        .into_iter()
        .chain(from_sibling)
        .next()
        .map(|name| format!("client::{name}"))
}

/// The halves stay apart: the agent is the client's other end, not its user. The one allowed
/// crossing is the relay (`agent/relay.rs`), which by design runs a client's half for a client
/// that reaches the far end through this agent; every other agent file names nothing of
/// `crate::client`.
#[test]
fn the_agent_reaches_the_client_only_through_the_relay() {
    let agent = root().join("crates/core/src/agent");
    let found: Vec<String> = rust_files(&agent)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n != "relay.rs"))
        .filter_map(|f| client_crossing(&code_of(&f)).map(|what| format!("{} uses {what}", rel(&f))))
        .collect();
    assert!(
        found.is_empty(),
        "the agent is the client's other half, not its user (only relay.rs runs a client's half):\n{}",
        found.join("\n")
    );
    // The check sees a planted crossing, single or grouped, and not a comment naming the client.
    assert_eq!(
        client_crossing("use crate::client::unix_ns;").as_deref(),
        Some("client::unix_ns")
    );
    assert!(client_crossing("use crate::client::{Target, run_tcp};").is_some());
    assert!(client_crossing("let t = crate::client::system_time(0);").is_some());
    assert_eq!(
        client_crossing(&code_of_text("// see crate::client::run_tcp\nfn f() {}")),
        None
    );
}

/// The engines `code` (one file, comments stripped) imports through `engine::` or `super::`,
/// single or grouped (`super::super::tcp`, `crate::engine::{pin, http::HttpUrl}`).
fn engines_imported(code: &str) -> Vec<String> {
    let mut found: Vec<String> = ["engine", "super"]
        .into_iter()
        .flat_map(|prefix| names_after(code, prefix))
        .filter(|name| ENGINES.contains(&name.as_str()))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Each engine each of `files` imports, as a line naming the file.
fn engines_imported_by(files: Vec<PathBuf>) -> Vec<String> {
    files
        .into_iter()
        .flat_map(|f| {
            engines_imported(&code_of(&f))
                .into_iter()
                .map(move |name| format!("{} names engine::{name}", rel(&f)))
        })
        .collect()
}

/// The engines `code`, the engine module's own file, names by a path from itself
/// (`http::TlsSetupError`): there a path that starts at `http::` is the engine, not the crate.
fn engines_named_by_their_parent(code: &str) -> Vec<String> {
    ENGINES
        .into_iter()
        .filter(|kind| !names_after(code, kind).is_empty())
        .map(str::to_string)
        .collect()
}

/// The server (`httpd/`) is the far end of the load client's engine, not its user: what both
/// ends of HTTP share (TLS's provider, ticketer and setup errors; the rustls-tokio adapter) sits
/// in the base below both (`crate::tls`, `crate::tlsio`), so no server file names an engine.
#[test]
fn the_server_never_imports_the_client_engine() {
    let found = engines_imported_by(rust_files(&root().join("crates/core/src/httpd")));
    assert!(
        found.is_empty(),
        "the server takes what it shares with the client's engine from the base below both \
         (crate::tls, crate::tlsio), never from the engine:\n{}",
        found.join("\n")
    );
    assert_eq!(
        engines_imported("let p = crate::engine::http::tls_provider();"),
        ["http"]
    );
    assert_eq!(engines_imported("use crate::engine::{pin, http::HttpUrl};"), ["http"]);
    let base = code_of_text("// as crate::engine::http did\nuse crate::tls::provider;\nuse http::StatusCode;");
    assert!(engines_imported(&base).is_empty(), "the http crate is not the engine");
}

/// The runner (`engine/run/`) and the base's own module (`engine/mod.rs`, where `EngineError`
/// lives) sit below every engine: they name none of tcp, udp, rr or http, so an engine's
/// failure reaches the runner's error as a type of the base (TLS's setup error is
/// `crate::tls`'s), never as the engine's own.
#[test]
fn the_runner_names_no_engine() {
    let engine = root().join("crates/core/src/engine");
    let mut found = engines_imported_by(rust_files(&engine.join("run")));
    let base = engine.join("mod.rs");
    let code = code_of(&base);
    for name in engines_imported(&code)
        .into_iter()
        .chain(engines_named_by_their_parent(&code))
    {
        found.push(format!("{} (EngineError's file) names engine::{name}", rel(&base)));
    }
    assert!(
        found.is_empty(),
        "the runner and EngineError serve every engine and name none (move what they need into \
         the base):\n{}",
        found.join("\n")
    );
    assert_eq!(
        engines_named_by_their_parent("    Tls(#[source] http::TlsSetupError),"),
        ["http"]
    );
    assert!(engines_named_by_their_parent("pub mod http;\npub mod tcp;\nconst X: &str = \"http://\";").is_empty());
    assert_eq!(
        engines_imported("use super::super::{tcp, udp::Header};"),
        ["tcp", "udp"]
    );
    assert!(engines_imported("use crate::engine::{Sink, sockopt::POLL_SLICE};").is_empty());
}

/// [`code_of`] for text in hand.
fn code_of_text(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn unix_time_is_read_in_one_place() {
    let mut found = Vec::new();
    for dir in ["src", "crates/core/src"] {
        for f in rust_files(&root().join(dir)) {
            if !f.ends_with("unixtime.rs") && code_of(&f).contains("UNIX_EPOCH") {
                found.push(rel(&f));
            }
        }
    }
    assert!(
        found.is_empty(),
        "read the wall clock as Unix time through linerate_core::unixtime:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_is_over_800_lines_without_a_note() {
    let mut found = Vec::new();
    for dir in ["src", "crates"] {
        for f in rust_files(&root().join(dir)) {
            if f.components()
                .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "target")
            {
                continue;
            }
            let text = fs::read_to_string(&f).expect("readable");
            let lines = text.lines().count();
            let note = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .any(|l| l.contains(LONG_NOTE));
            if lines > MAX_LINES && !note {
                found.push(format!("{} has {lines} lines", rel(&f)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "split these by job, or say in their //! why they are {LONG_NOTE}:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_path_reader_sees_single_and_grouped_imports() {
    let code = "use super::tcp::Gate;\nuse crate::engine::{pin, udp::Header};\nuse xengine::rr;";
    assert_eq!(names_after(code, "super"), ["tcp"]);
    assert_eq!(names_after(code, "engine"), ["pin", "udp", "Header"]);
}

// ---------------------------------------------------------------------------------------------
// The crates' direction: core links nothing of the results side, no library prints.

/// What only the results side needs (the store, plans, statistics): the agent links core alone.
const RESULTS_ONLY: [&str; 6] = ["rusqlite", "toml", "statrs", "flate2", "serde-transcode", "strsim"];

#[test]
fn the_core_links_nothing_of_the_results_side() {
    let manifest = fs::read_to_string(root().join("crates/core/Cargo.toml")).expect("readable");
    let mut found = Vec::new();
    for line in manifest.lines().map(|l| l.split('#').next().unwrap_or("")) {
        let name = line.split(['=', '.']).next().unwrap_or("").trim();
        if name == "linerate-results" || RESULTS_ONLY.contains(&name) {
            found.push(format!("crates/core/Cargo.toml depends on {name}"));
        }
    }
    for f in rust_files(&root().join("crates/core/src")) {
        if code_of(&f).contains("linerate_results") {
            found.push(format!("{} uses linerate_results", rel(&f)));
        }
    }
    assert!(
        found.is_empty(),
        "linerate-core is what the agent links; the results side sits above it:\n{}",
        found.join("\n")
    );
}

/// What the wire crate must not link: sockets, event loops, TLS, system calls.
const IO_CRATES: [&str; 7] = ["mio", "rustls", "tokio", "io-uring", "socket2", "nix", "libc"];

/// The dependency names of a manifest's sections, as (section, name): `[dependencies]`,
/// `[dev-dependencies]`, `[target.'cfg(..)'.dependencies]`, and `[dependencies.NAME]` tables.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in manifest.lines().map(|l| l.split('#').next().unwrap_or("").trim()) {
        if let Some(head) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = head.to_string();
            if let Some((table, name)) = head.rsplit_once('.')
                && table.ends_with("dependencies")
            {
                out.push((table.to_string(), name.to_string()));
            }
            continue;
        }
        if section.ends_with("dependencies") && !line.is_empty() {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            out.push((section.clone(), name.to_string()));
        }
    }
    out
}

/// What the wire crate does that is I/O: an I/O crate in its manifest, `std::net`, `std::fs` or
/// `std::process` in its sources (`core::net::IpAddr`, the address type alone, is data).
fn wire_io(manifest: &str, sources: &[(String, String)]) -> Vec<String> {
    let mut found: Vec<String> = dependencies(manifest)
        .into_iter()
        .filter(|(_, name)| IO_CRATES.contains(&name.as_str()))
        .map(|(section, name)| format!("crates/wire/Cargo.toml [{section}] names {name}"))
        .collect();
    for (file, text) in sources {
        for name in names_after(&code_of_text(text), "std") {
            if ["net", "fs", "process"].contains(&name.as_str()) {
                found.push(format!("{file} names std::{name}"));
            }
        }
    }
    found
}

#[test]
fn the_wire_crate_does_no_io() {
    let manifest = fs::read_to_string(root().join("crates/wire/Cargo.toml")).expect("readable");
    let files: Vec<(String, String)> = rust_files(&root().join("crates/wire/src"))
        .into_iter()
        .map(|f| (rel(&f), fs::read_to_string(&f).expect("readable")))
        .collect();
    assert!(files.len() > 5, "crates/wire/src holds the crate");
    let found = wire_io(&manifest, &files);
    assert!(
        found.is_empty(),
        "the wire crate is types only: the reading, the sockets and the processes are core's:\n{}",
        found.join("\n")
    );
}

/// `crate`'s manifest naming linerate-core where it is linked (anywhere but dev-dependencies).
fn core_linked(krate: &str, manifest: &str) -> Vec<String> {
    dependencies(manifest)
        .into_iter()
        .filter(|(section, name)| name == "linerate-core" && !section.ends_with("dev-dependencies"))
        .map(|(section, _)| format!("{krate}/Cargo.toml [{section}] names linerate-core"))
        .collect()
}

#[test]
fn the_report_and_results_crates_compile_no_engine() {
    let mut found = Vec::new();
    for krate in ["crates/report", "crates/results"] {
        let manifest = fs::read_to_string(root().join(krate).join("Cargo.toml")).expect("readable");
        found.extend(core_linked(krate, &manifest));
    }
    assert!(
        found.is_empty(),
        "the report and results crates read documents through linerate-wire; core only for their tests:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_crate_checks_find_io_and_a_linked_core() {
    let manifest =
        "[dependencies]\nserde = \"1\"\nlibc.workspace = true # a comment\n[dependencies.tokio]\nversion = \"1\"\n";
    let sources = [(
        "a.rs".to_string(),
        "use std::{fs, io};\n// std::net in a comment\nfn f() { std::process::exit(0) }".to_string(),
    )];
    assert_eq!(
        wire_io(manifest, &sources),
        [
            "crates/wire/Cargo.toml [dependencies] names libc",
            "crates/wire/Cargo.toml [dependencies] names tokio",
            "a.rs names std::fs",
            "a.rs names std::process",
        ]
    );
    let manifest = "[dependencies]\nlinerate-wire = { path = \"../wire\" }\n[dev-dependencies]\nlinerate-core = { path = \"../core\" }\n";
    assert!(
        core_linked("crates/report", manifest).is_empty(),
        "a dev-dependency is the tests'"
    );
    let manifest = format!("{manifest}[target.'cfg(unix)'.dependencies]\nlinerate-core = {{ path = \"../core\" }}\n");
    assert_eq!(
        core_linked("crates/report", &manifest),
        ["crates/report/Cargo.toml [target.'cfg(unix)'.dependencies] names linerate-core"]
    );
}

#[test]
fn no_library_prints() {
    let mut found = Vec::new();
    for lib in ["core", "lab", "report", "results", "wire"] {
        let src = root().join("crates").join(lib).join("src");
        let top = fs::read_to_string(src.join("lib.rs")).expect("every library has a lib.rs");
        if !top.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]") {
            found.push(format!("crates/{lib}/src/lib.rs does not deny printing"));
        }
        if lib != "results" {
            continue;
        }
        // The results side is data in, data out: not even its tests print.
        for f in rust_files(&src) {
            let t = tokens(&fs::read_to_string(&f).expect("readable"));
            for pair in t.windows(2) {
                let [Token::Ident(name), Token::Punct(next)] = pair else {
                    continue;
                };
                let macro_ = *next == '!' && ["print", "println", "eprint", "eprintln", "dbg"].contains(&name.as_str());
                let stream = *next == '(' && ["stdout", "stderr"].contains(&name.as_str());
                if macro_ || stream {
                    found.push(format!("{} uses {name}{next}", rel(&f)));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "libraries return data; the binary prints:\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// No import circle between files.

/// `text` with comments and the insides of string and char literals blanked, so that every
/// brace and `::` left is code's (a `"{}"` in a format string opens no block).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && matches!(at(i + 2), '"' | '#')))
            && !(i > 0 && ident(c[i - 1]) && c[i - 1] != 'b')
        {
            // A raw string: r"..." or r#"..."#, any number of #.
            let hashes = (i + 1..c.len()).take_while(|&k| c[k] == '#').count();
            i += 2 + hashes;
            while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#'))) {
                i += 1;
            }
            i += 1 + hashes;
            out.push_str("\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c[i] == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A char literal ('{', '\n', '\u{7b}'); a lifetime ('a) has no closing quote.
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Path, // `::`
    Punct(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let c: Vec<char> = code_only(code).chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(c[start..i].iter().collect()));
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token::Path);
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push(Token::Punct(c[i]));
            }
            i += 1;
        }
    }
    out
}

/// The paths of a use tree starting at `t[at]` under `prefix`: `a::b`, `a::{b, c::d}`, `*`,
/// `self`; an `as` alias or a generic argument ends a path. Returns the paths and where the
/// tree ends.
fn use_tree(t: &[Token], mut at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    match t.get(at) {
        Some(Token::Punct('{')) => {
            let mut out = Vec::new();
            at += 1;
            loop {
                match t.get(at) {
                    None => return (out, at),
                    Some(Token::Punct('}')) => return (out, at + 1),
                    Some(Token::Punct(',')) => at += 1,
                    _ => {
                        let (paths, end) = use_tree(t, at, prefix.clone());
                        out.extend(paths);
                        // Skip what follows the path (`as name`) up to the next item.
                        at = end.max(at + 1);
                        while !matches!(t.get(at), None | Some(Token::Punct(',' | '}'))) {
                            at += 1;
                        }
                    }
                }
            }
        }
        Some(Token::Ident(name)) if name == "self" => (vec![prefix], at + 1),
        Some(Token::Ident(name)) => {
            let mut path = prefix;
            path.push(name.clone());
            if t.get(at + 1) == Some(&Token::Path) {
                use_tree(t, at + 2, path)
            } else {
                (vec![path], at + 1)
            }
        }
        _ => (vec![prefix], at + 1),
    }
}

/// Every module path a file names through `crate::`, `super::` or `self::` (in `use` lines and
/// in code), made absolute from the module it is written in: the file's `module`, and any
/// inline `mod name { ... }` around the path.
fn absolute_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let t = tokens(code);
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new(); // inline modules open, and their depth
    let mut depth = 0;
    for i in 0..t.len() {
        match &t[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            Token::Ident(m) if m == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) = (t.get(i + 1), t.get(i + 2)) {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Token::Ident(root) if ["crate", "super", "self"].contains(&root.as_str()) => {
                let continues = t.get(i + 1) == Some(&Token::Path);
                let inside = i > 0 && matches!(t[i - 1], Token::Path | Token::Punct('$'));
                if !continues || inside {
                    continue;
                }
                let mut here: Vec<String> = module.to_vec();
                here.extend(inline.iter().map(|(n, _)| n.clone()));
                let mut at = i;
                let base = match root.as_str() {
                    "crate" => {
                        at += 2;
                        Vec::new()
                    }
                    "self" => {
                        at += 2;
                        here
                    }
                    _ => {
                        while t.get(at) == Some(&Token::Ident("super".into())) && t.get(at + 1) == Some(&Token::Path) {
                            here.pop();
                            at += 2;
                        }
                        here
                    }
                };
                out.extend(use_tree(&t, at, base).0);
            }
            _ => {}
        }
    }
    out
}

/// The module path of a file under a crate's `src/`: `httpd/parser.rs` is `httpd::parser`,
/// `httpd/mod.rs` is `httpd`, `lib.rs` the crate root.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The files of a crate (paths under `src/`, with their text) as a graph: an edge from each
/// file to every file whose module it names, resolved to the longest module path that is a
/// file (`crate::httpd::router::Route` is `httpd/router.rs`, `super::MAX_BODY_BYTES` the
/// parent's file). A file naming its own submodules is no edge: a module owns what it declares
/// (it re-exports and calls them), while a submodule reading its parent's shared types is one.
fn file_graph(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, &str> = files.iter().map(|(f, _)| (module_of(f), f.as_str())).collect();
    let mut graph = BTreeMap::new();
    for (file, text) in files {
        let module = module_of(file);
        let edges: &mut BTreeSet<String> = graph.entry(file.clone()).or_default();
        for path in absolute_paths(text, &module) {
            let Some(target) = (0..=path.len()).rev().find_map(|n| by_module.get(&path[..n])) else {
                continue;
            };
            if module_of(target).starts_with(&module) {
                continue; // itself, or a module it owns
            }
            edges.insert(target.to_string());
        }
    }
    graph
}

/// The circles of a graph: each set of two or more files that reach each other (a strongly
/// connected component), written as the files in order with the imports among them.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(f) = todo.pop() {
            for g in graph.get(&f).into_iter().flatten() {
                if seen.insert(g.clone()) {
                    todo.push(g.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|f| (f, reach(f))).collect();
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for f in graph.keys() {
        if placed.contains(f) || !reached[f].contains(f) {
            continue;
        }
        let circle: BTreeSet<&String> = graph
            .keys()
            .filter(|g| reached[f].contains(*g) && reached[*g].contains(f))
            .collect();
        let imports: Vec<String> = circle
            .iter()
            .flat_map(|a| {
                graph[*a]
                    .iter()
                    .filter(|b| circle.contains(b))
                    .map(move |b| format!("{a} -> {b}"))
            })
            .collect();
        placed.extend(circle.iter().map(|g| (*g).clone()));
        out.push(imports.join(", "));
    }
    out
}

/// Every `.rs` file under `src` with its text, named by its path under `src`.
fn sources(src: &Path) -> Vec<(String, String)> {
    rust_files(src)
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(src).expect("under src").display().to_string();
            (name, fs::read_to_string(&f).expect("readable"))
        })
        .collect()
}

#[test]
fn no_two_files_of_a_library_import_each_other() {
    let mut found = Vec::new();
    for krate in [
        "crates/core",
        "crates/results",
        "crates/report",
        "crates/lab",
        "crates/wire",
    ] {
        let src = root().join(krate).join("src");
        let files = sources(&src);
        assert!(files.len() > 5, "{krate}/src holds the crate");
        for circle in circles(&file_graph(&files)) {
            found.push(format!("{krate}/src: {circle}"));
        }
    }
    assert!(
        found.is_empty(),
        "import circles (one of the files holds two things: move the shared part down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_finder_follows_groups_super_and_inline_modules() {
    let files = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter().map(|(f, t)| (f.to_string(), t.to_string())).collect()
    };
    let tree = files(&[
        ("lib.rs", "pub mod a;\npub mod b;\nmod c;\npub const X: u8 = 1;"),
        ("a/mod.rs", "mod inner;\npub use inner::Y;\nuse crate::{c::Z, b as _};"),
        ("a/inner.rs", "pub struct Y;\nfn f() -> u8 { super::super::X }"),
        (
            "b.rs",
            "// use crate::a::Y;\nconst S: &str = \"crate::a::Y {\";\nmod t { use super::super::c::Z; }",
        ),
        (
            "c.rs",
            "pub struct Z;\nfn g() { let _ = '{'; let _ = crate::a::inner::Y; }",
        ),
    ]);
    let graph = file_graph(&tree);
    assert_eq!(
        graph["a/mod.rs"],
        BTreeSet::from(["b.rs".to_string(), "c.rs".to_string()])
    );
    assert_eq!(graph["a/inner.rs"], BTreeSet::from(["lib.rs".to_string()]));
    assert_eq!(graph["b.rs"], BTreeSet::from(["c.rs".to_string()]));
    assert_eq!(graph["lib.rs"], BTreeSet::new(), "a module owns what it declares");
    assert!(
        circles(&graph).is_empty(),
        "a/mod.rs -> c.rs -> a/inner.rs is no circle"
    );
    let mut closed = tree.clone();
    closed[4].1.push_str("\nuse crate::a::Y;");
    assert_eq!(
        circles(&file_graph(&closed)),
        ["a/mod.rs -> b.rs, a/mod.rs -> c.rs, b.rs -> c.rs, c.rs -> a/mod.rs"]
    );
}

/// The link properties that make a lab link timed: what crosses it is late, lost, reordered or
/// held to a rate, and a test across it asserts so.
const SHAPING: [&str; 6] = ["rate=", "delay=", "loss=", "reorder=", "jitter=", "duplicate="];

/// The string literals of `code` (no escapes beyond `\"` are needed for link specs).
fn literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find('"') {
        let body = &rest[i + 1..];
        let mut end = 0;
        let bytes = body.as_bytes();
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        out.push(body[..end.min(body.len())].to_string());
        rest = &body[(end + 1).min(body.len())..];
    }
    out
}

/// What in `code` brings up a lab link shaped in rate, delay, loss or order: each `Lab::up...`
/// call's link specs (`"h1:rate=200mbit"`, `"delay=1ms,loss=1%"`), up to the call's `else` or `;`.
fn shaped_lab_links(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Lab::up") {
        let call = &code[at..];
        let end = [call.find(" else"), call.find(';')]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(call.len());
        for spec in literals(&call[..end]) {
            let shaped = spec
                .split([',', ':'])
                .any(|part| SHAPING.iter().any(|p| part.starts_with(p)));
            if shaped {
                found.push(spec);
            }
        }
    }
    found
}

/// The names by which a test takes the timed target's lock.
const LOCK: [&str; 3] = ["alone(", "quiet_machine", "timed!"];

/// Where `code`, a file of tests/timed, has a test not written `#[apply(timed!)]`: a plain
/// `#[test]` (or `#[tokio::test]`...) outside the one `timed!` macro of main.rs, or a `timed!`
/// that does not take the lock.
fn untimed_tests(code: &str, is_main: bool) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code.to_string();
    if is_main {
        match code.find("macro_rules! timed") {
            Some(at) => {
                let body = &code[at..];
                let end = body.find("\n}\n").unwrap_or(body.len());
                if !body[..end].contains("alone(") {
                    found.push("the timed! macro does not take machine::alone".to_string());
                }
                rest = format!("{}{}", &code[..at], &body[end..]);
            }
            None => found.push("main.rs defines no timed! macro".to_string()),
        }
    }
    for attr in ["#[test]", "::test]"] {
        for _ in rest.matches(attr) {
            found.push(format!("a plain {attr}: write #[apply(timed!)]"));
        }
    }
    found
}

/// A test that asserts a rate, a delay or a ratio runs where nothing runs beside it.
/// Cargo runs test binaries one after another, so the timed target holds them; inside it the
/// `timed!` macro takes one lock for each test. Checked here: nothing under tests/it brings up a
/// shaped lab link or names the lock, every test under tests/timed is written the timed way, and
/// the shared harness holds no test of its own.
#[test]
fn timed_tests_live_in_the_timed_target_and_run_alone() {
    let mut found = Vec::new();
    for f in rust_files(&root().join("tests/it")) {
        if f.starts_with(root().join("tests/it/layout")) {
            continue; // names what it looks for
        }
        let code = code_of(&f);
        for spec in shaped_lab_links(&code) {
            found.push(format!(
                "{}: a lab link {spec:?} under tests/it: move the test to tests/timed",
                rel(&f)
            ));
        }
        for name in LOCK {
            if code.contains(name) {
                found.push(format!("{}: names the timed lock ({name}) under tests/it", rel(&f)));
            }
        }
    }
    let timed = rust_files(&root().join("tests/timed"));
    assert!(timed.len() > 1, "the timed target's files: {timed:?}");
    for f in timed {
        for why in untimed_tests(&code_of(&f), f.ends_with("main.rs")) {
            found.push(format!("{}: {why}", rel(&f)));
        }
    }
    for f in rust_files(&root().join("tests/harness")) {
        if code_of(&f).contains("#[test]") {
            found.push(format!(
                "{}: a test in the shared harness (it would run in both targets)",
                rel(&f)
            ));
        }
    }
    assert!(
        found.is_empty(),
        "the functional/timed split (issue 37):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_split_check_finds_shaped_links_and_plain_tests() {
    let it = r#"
        let Some(lab) = Lab::up(2, &["mtu=9000", "h1:rate=200mbit"]) else { return };
        let Some(b) = Lab::up_netem(2, &["h1:delay=1ms,reorder=5%"]) else { return };
        let Some(c) = Lab::up(3, &[]) else { return };
        let out = linerate(&["lab", "up", "--link", "h1-h2:delay=1ms"], LIMIT);
    "#;
    assert_eq!(shaped_lab_links(it), ["h1:rate=200mbit", "h1:delay=1ms,reorder=5%"]);
    assert!(shaped_lab_links("Lab::up_with_profiles(3, &[], &PROFILES);").is_empty());
    let main = "macro_rules! timed {\n (...) => { #[test] fn $name() { let _a = alone(n); } };\n}\nmod lab;";
    assert!(untimed_tests(main, true).is_empty(), "{:?}", untimed_tests(main, true));
    let lockless = main.replace("alone(n)", "n");
    assert_eq!(untimed_tests(&lockless, true).len(), 1);
    assert_eq!(
        untimed_tests("#[test]\nfn x() {}\n#[apply(timed!)]\nfn y() {}", false).len(),
        1
    );
    assert_eq!(untimed_tests("#[tokio::test]\nasync fn x() {}", false).len(), 1);
    assert!(untimed_tests("#[apply(timed!)]\nfn y() {}", false).is_empty());
}
