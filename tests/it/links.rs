//! Every relative link of the repository's Markdown (README, ARCHITECTURE,
//! docs/, the lab's and the JS host's pages) points at a file that exists
//! and, with `#anchor`, at a heading of that file (GitHub's slugs). The seed
//! documents of docs/design/ are verbatim copies of the specification and
//! keep the links of the project they came from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The Markdown files a reader browses (not vendored or generated trees).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.')
                && !["target", "node_modules", "fuzz"].contains(&name.as_str())
            {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") && !name.starts_with("seed-") {
            out.push(path);
        }
    }
}

/// The text outside fenced code blocks and inline code.
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut kept = String::new();
            for (i, part) in line.split('`').enumerate() {
                if i % 2 == 0 {
                    kept.push_str(part);
                }
            }
            lines.push(kept);
        }
    }
    lines
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

/// The targets of `[text](target)` links in `lines`.
fn links(lines: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        for (i, part) in line.split("](").enumerate() {
            if i > 0
                && let Some((target, _)) = part.split_once(')')
            {
                out.push(target.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn relative_links_resolve() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() > 5, "found the docs: {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in links(&prose(&text)) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let shown = format!("{}: {target}", file.strip_prefix(&root).unwrap().display());
            if !resolved.exists() {
                broken.push(format!("{shown} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| resolved.is_file()) {
                let linked = std::fs::read_to_string(&resolved).unwrap_or_default();
                if resolved.extension().is_some_and(|e| e == "md")
                    && !anchors(&linked).contains(anchor)
                {
                    broken.push(format!("{shown} (no such heading)"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
