// SPDX-License-Identifier: GPL-2.0

//! The driver's layers (ferroce.rs): `protocol` < `verbs` < `net` < `engine`, then the entry
//! points (`ops.rs`, `ferroce.rs`). A module may import from its own layer and the layers
//! before it, never from one after it; and `protocol` is `core` only (this crate builds all of
//! it on the host).

use std::{fs, path::Path};

const LAYERS: [&str; 4] = ["protocol", "verbs", "net", "engine"];

fn driver() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Every `.rs` file of a layer: its module file and its folder, recursively.
fn files_of(layer: &str) -> Vec<std::path::PathBuf> {
    let mut out = vec![driver().join(format!("{layer}.rs"))];
    let mut dirs = vec![driver().join(layer)];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}

/// Splits `s` at its commas outside braces.
fn top_level_items(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(s[start..].trim());
    items.retain(|i| !i.is_empty());
    items
}

/// The first path segments after each `crate::` of `text` (in `use crate::{...}` groups,
/// each item's), with the line they are on.
fn crate_imports(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let line_of = |at: usize| text[..at].lines().count();
    let mut from = 0;
    while let Some(i) = text[from..].find("crate::") {
        let at = from + i + "crate::".len();
        from = at;
        if text[at..].starts_with('{') {
            // The group ends at its matching brace.
            let mut depth = 0;
            let end = text[at..]
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map(|(j, _)| at + j)
                .expect("unbalanced use group");
            for item in top_level_items(&text[at + 1..end]) {
                let name: String = item
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((name, line_of(at)));
            }
        } else {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push((name, line_of(at)));
        }
    }
    out
}

#[test]
fn layers_import_only_the_layers_before_them() {
    let mut wrong = Vec::new();
    for (rank, layer) in LAYERS.iter().enumerate() {
        for file in files_of(layer) {
            let text = fs::read_to_string(&file).unwrap();
            for (name, line) in crate_imports(&text) {
                match LAYERS.iter().position(|l| *l == name) {
                    Some(r) if r <= rank => {}
                    // A layer after this one, or a name at the crate's root (the entry points).
                    _ => wrong.push(format!("{}:{line}: crate::{name}", file.display())),
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_protocol_layer_is_core_only() {
    let lib = fs::read_to_string(driver().join("host-tests/src/lib.rs")).unwrap();
    for file in files_of("protocol") {
        let text = fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("kernel::"),
            "{} uses the kernel crate",
            file.display()
        );
        let name = file.strip_prefix(driver()).unwrap().display().to_string();
        if name == "protocol.rs" {
            // The layer's module list: this crate names the modules itself.
            continue;
        }
        assert!(
            lib.contains(&format!("\"../../{name}\"")),
            "{name} is not built on the host (host-tests/src/lib.rs)"
        );
    }
}

#[test]
fn the_check_sees_a_wrong_import() {
    let text = "use crate::{\n    engine::qp,\n    protocol::{abi::{self, Cqe}, psn},\n};\nfn f() { crate::net::wire::x(); }";
    let names: Vec<String> = crate_imports(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["engine", "protocol", "net"]);
}
