//! Builds the guest components — the core, the bundled NER and LLM plugins and the
//! test-fixture plugins — for `wasm32-wasip2`, so that building the host is
//! the only command anyone runs. It uses its own target folder, so it never
//! waits on the outer cargo's lock. Each artifact's path reaches the host as
//! an environment variable at compile time.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.parent().map(PathBuf::from).unwrap_or_default();
    for path in [
        "core/src",
        "core/Cargo.toml",
        "wit",
        "Cargo.lock",
        "plugins",
        "tests/fixtures/plugins",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }

    let outer_target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let target_dir = outer_target.join("guest");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir)
        .args(GUESTS.iter().flat_map(|(package, _)| ["-p", package]))
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_MAKEFLAGS");
    // `MNEMO_LINT_GUESTS=1` (CI): clippy lints the guests as they really
    // build, for wasm32, every warning an error, so no separate
    // `cargo clippy --target wasm32-wasip2` compiles their dependencies a
    // second time. (Opt-in: the flags change the guests' fingerprints.)
    println!("cargo:rerun-if-env-changed=MNEMO_LINT_GUESTS");
    if std::env::var("MNEMO_LINT_GUESTS").is_ok_and(|v| v == "1") {
        let clippy = Command::new("rustup")
            .args(["which", "clippy-driver"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let Some(clippy) = clippy else {
            println!(
                "cargo:warning=MNEMO_LINT_GUESTS=1, but `rustup which clippy-driver` found none"
            );
            std::process::exit(1);
        };
        build
            .env("RUSTC_WORKSPACE_WRAPPER", clippy)
            .env("CARGO_ENCODED_RUSTFLAGS", "-Dwarnings");
    }
    let status = build.status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            println!(
                "cargo:warning=building the guest components failed ({s}): see the errors above (clippy's too with MNEMO_LINT_GUESTS=1); is the wasm32-wasip2 target installed? (`rustup target add wasm32-wasip2`)"
            );
            std::process::exit(1);
        }
        Err(e) => {
            println!("cargo:warning=could not run cargo to build the core component: {e}");
            std::process::exit(1);
        }
    }
    for (package, var) in GUESTS {
        let wasm = target_dir
            .join("wasm32-wasip2/release")
            .join(format!("{}.wasm", package.replace('-', "_")));
        println!("cargo:rustc-env={var}={}", wasm.display());
    }
}

/// Guest packages and the variable that carries each artifact's path.
const GUESTS: &[(&str, &str)] = &[
    ("mnemo-core", "MNEMO_CORE_WASM"),
    ("mnemo-ner-regex", "MNEMO_PLUGIN_REGEX_WASM"),
    ("mnemo-ner-names", "MNEMO_PLUGIN_NAMES_WASM"),
    ("mnemo-ner-misbehave", "MNEMO_FIXTURE_MISBEHAVE_WASM"),
    ("mnemo-ner-future-abi", "MNEMO_FIXTURE_FUTURE_ABI_WASM"),
    ("mnemo-llm-openai", "MNEMO_PLUGIN_LLM_OPENAI_WASM"),
    ("mnemo-llm-anthropic", "MNEMO_PLUGIN_LLM_ANTHROPIC_WASM"),
    ("mnemo-llm-ollama", "MNEMO_PLUGIN_LLM_OLLAMA_WASM"),
    ("mnemo-llm-hostile", "MNEMO_FIXTURE_LLM_HOSTILE_WASM"),
];
