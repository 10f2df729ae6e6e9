//! Builds the core component (`core/` for `wasm32-wasip2`) so that building
//! the host is the only command anyone runs. It uses its own target folder,
//! so it never waits on the outer cargo's lock.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.parent().map(PathBuf::from).unwrap_or_default();
    for path in ["core/src", "core/Cargo.toml", "wit", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=MNEMO_CORE_WASM_PREBUILT");

    // An explicit prebuilt component (e.g. from `cargo build -p mnemo-core --target wasm32-wasip2`).
    if let Ok(prebuilt) = std::env::var("MNEMO_CORE_WASM_PREBUILT") {
        println!("cargo:rustc-env=MNEMO_CORE_WASM={prebuilt}");
        return;
    }

    let outer_target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let target_dir = outer_target.join("guest");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "-p",
            "mnemo-core",
            "--target-dir",
        ])
        .arg(&target_dir)
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_MAKEFLAGS")
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            println!(
                "cargo:warning=building the core component failed ({s}); is the wasm32-wasip2 target installed? (`rustup target add wasm32-wasip2`)"
            );
            std::process::exit(1);
        }
        Err(e) => {
            println!("cargo:warning=could not run cargo to build the core component: {e}");
            std::process::exit(1);
        }
    }
    let wasm = target_dir.join("wasm32-wasip2/release/mnemo_core.wasm");
    println!("cargo:rustc-env=MNEMO_CORE_WASM={}", wasm.display());
}
