//! The house rules of docs/architecture.md, checked on the source text so they stay true:
//! engines never import each other, the result document's types import nothing above them,
//! the binary holds no protocol or engine logic, and no source file grows past 800 lines
//! without saying why in its opening comment (issue 12).
//!
//! The checks read `use` paths as text (no parser): a path is a run of identifiers joined by
//! `::`, and a brace group after `engine::` or `super::` is looked into, so both
//! `use super::tcp::Gate` and `use crate::engine::{pin, udp}` are seen.

use std::fs;
use std::path::{Path, PathBuf};

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
    let text = fs::read_to_string(path).expect("a source file is readable");
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
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

#[test]
fn the_result_types_import_nothing_above_them() {
    let result = root().join("crates/core/src/result");
    let files = rust_files(&result);
    assert!(!files.is_empty(), "crates/core/src/result/ holds the document's types");
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
