//! Every input kept in `fuzz/regressions/<target>/` (inputs that once
//! crashed a target, and seeds) runs through its target as a plain test.

use std::path::Path;

#[test]
fn every_kept_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut ran = 0;
    for (name, target) in mnemo_fuzz::TARGETS {
        let Ok(dir) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        for entry in dir.flatten() {
            let data = std::fs::read(entry.path()).unwrap_or_default();
            println!("{name}: {}", entry.path().display());
            target(&data);
            ran += 1;
        }
    }
    assert!(ran > 0, "no kept input under {}", root.display());
}
