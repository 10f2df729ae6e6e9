//! The spec travels with the code: every "§x.y" a source file, WIT file or
//! document of the repository cites names a section of seed 004 as kept in
//! `docs/design/`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if !["target", "design", "node_modules"].contains(&name.as_str())
                && !name.starts_with('.')
            {
                sources(&path, out);
            }
        } else if [".rs", ".wit", ".md", ".txt"]
            .iter()
            .any(|e| name.ends_with(e))
        {
            out.push(path);
        }
    }
}

/// `(major, minor)` of every "§N" / "§N.M" in `text`.
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices('§') {
        let rest = text.get(i + '§'.len_utf8()..).unwrap_or_default();
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        if !number.is_empty() {
            out.push(number.to_string());
        }
    }
    out
}

#[test]
fn every_section_reference_resolves_to_the_design_documents() {
    let seed = std::fs::read_to_string(root().join("docs/design/seed-004-layered-memory.md"))
        .expect("docs/design/seed-004-layered-memory.md is in the repository");
    let headings: Vec<String> = seed
        .lines()
        .filter(|l| l.starts_with("## ") || l.starts_with("### "))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(|n| n.trim_end_matches('.').to_string())
        .collect();
    let mut files = Vec::new();
    for dir in [
        "core",
        "host",
        "lab",
        "plugins",
        "wit",
        "tests",
        "scripts",
        "docs/guide",
    ] {
        sources(&root().join(dir), &mut files);
    }
    files.push(root().join("README.md"));
    files.push(root().join("ARCHITECTURE.md"));
    let mut checked = 0;
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for number in references(&text) {
            checked += 1;
            if !headings.contains(&number) {
                missing.push(format!("{}: §{number}", file.display()));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} references found: is the scan looking in the right place?"
    );
    assert!(
        missing.is_empty(),
        "references to no section of seed 004: {missing:#?}"
    );
}

#[test]
fn the_design_documents_the_code_names_are_in_the_repository() {
    for file in [
        "docs/design/README.md",
        "docs/design/forgetting.md",
        "docs/design/design.md",
        "docs/design/seed-003-memory-extension.md",
        "docs/design/seed-004-layered-memory.md",
    ] {
        assert!(root().join(file).is_file(), "{file} is missing");
    }
}
