//! The pages of `docs/reference/` are what `mnemo_host::reference` writes
//! from the code (settings, CLI, OpenAPI, MCP tools): a page that drifted
//! fails here. `MNEMO_UPDATE_REFERENCE=1` rewrites them instead.

use std::path::PathBuf;

fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/reference")
}

#[test]
fn reference_pages_match_the_code() {
    let update = std::env::var_os("MNEMO_UPDATE_REFERENCE").is_some();
    let pages = mnemo_host::reference::pages();
    let mut drifted = Vec::new();
    for (name, text) in &pages {
        let path = folder().join(name);
        if update {
            std::fs::write(&path, text).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if &committed != text {
            drifted.push(*name);
        }
    }
    assert!(
        drifted.is_empty(),
        "docs/reference/{drifted:?} differ from the code; regenerate with \
         `MNEMO_UPDATE_REFERENCE=1 cargo test -p mnemo-host --test it reference` and commit"
    );
    let mut present: Vec<String> = std::fs::read_dir(folder())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    present.sort();
    let mut generated: Vec<String> = pages.iter().map(|(n, _)| n.to_string()).collect();
    generated.sort();
    assert_eq!(
        present, generated,
        "docs/reference/ holds only generated pages"
    );
}

#[test]
fn every_setting_is_documented_with_a_default() {
    use mnemo_host::config::Settings;
    for s in Settings::REFERENCE {
        assert!(s.doc.trim().len() > 10, "{} says what it is", s.name);
        assert!(!s.default.is_empty(), "{} has a default", s.name);
    }
}

#[test]
fn every_cli_argument_says_what_it_is() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if a.is_hide_set() || a.is_global_set() || matches!(id, "help" | "version") {
                continue;
            }
            if a.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    let mut root = mnemo_host::cli::command();
    root.build();
    walk(&root, "mnemo", &mut missing);
    assert!(missing.is_empty(), "arguments without help: {missing:?}");
}
