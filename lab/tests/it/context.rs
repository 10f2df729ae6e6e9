//! `mnemo-lab eval context` on the labelled set in the repo with the
//! default local model: the figures docs/evaluation.md reports stay where
//! they were measured (the gate's constants were chosen on this set), and
//! the product's `context` injects what the scorer counts. Needs the model
//! files (`.ci/run` installs them and sets `MNEMO_MODEL_DIR`).

use std::process::{Command, Stdio};

use crate::ok;

#[test]
fn the_context_set_scores_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let set = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/context-set.json"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .args(["eval", "context", "--set", set, "--json"])
        .env("MNEMO_DATA_DIR", dir.path())
        .env_remove("MNEMO_EMBEDDER")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo-lab");
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(json["model"], "all-MiniLM-L6-v2", "{json}");
    assert_eq!(json["memories"], 200);
    assert_eq!(json["prompts"], 76);
    assert_eq!(
        json["context_differs"], 0,
        "context injects what was counted: {json}"
    );
    // docs/evaluation.md: blend 0.570 / 0.596, semantic 0.513 / 0.652.
    for (mode, precision, recall) in [("blend", 0.57, 0.596), ("semantic", 0.513, 0.652)] {
        let m = &json[mode];
        let (p, r) = (
            m["precision"].as_f64().unwrap(),
            m["recall"].as_f64().unwrap(),
        );
        assert!(
            p >= precision - 0.005 && r >= recall - 0.005,
            "{mode}: P {p:.3} R {r:.3}: {m}"
        );
    }
}
