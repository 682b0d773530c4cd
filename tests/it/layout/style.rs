//! One module-file style: a module with submodules is its folder's `mod.rs`, never a `name.rs`
//! beside a `name/` folder, so that a reader finds every module of a folder in it.

use super::{rel, root};
use std::path::Path;

/// Every `name.rs` under `dir` with a `name/` folder beside it that holds Rust files.
fn files_beside_their_folders(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            found.extend(files_beside_their_folders(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            let folder = p.with_extension("");
            if folder.is_dir() && !super::rust_files(&folder).is_empty() {
                found.push(rel(&p));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_module_with_submodules_is_its_folders_mod_rs() {
    let mut found = Vec::new();
    for dir in ["src", "crates", "tests"] {
        found.extend(files_beside_their_folders(&root().join(dir)));
    }
    assert!(
        found.is_empty(),
        "a module with submodules is `name/mod.rs`; move these into their folders:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_style_check_finds_a_file_beside_its_folder() {
    let dir = std::env::temp_dir().join(format!("linerate-style-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("engine/rr")).expect("a temporary folder");
    std::fs::create_dir_all(dir.join("empty")).expect("a temporary folder");
    for (path, text) in [
        ("engine/rr.rs", "mod open;"),
        ("engine/rr/open.rs", ""),
        ("engine/mod.rs", "mod rr;"),
        ("empty.rs", ""),
    ] {
        std::fs::write(dir.join(path), text).expect("a temporary file");
    }
    let found = files_beside_their_folders(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("engine/rr.rs"), "{found:?}");
}
