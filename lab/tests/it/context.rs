//! `mnemo-lab eval context` on the two labelled users in the repo with the
//! default local model: the figures docs/evaluation.md reports stay where
//! they were measured (the gate's weights were fitted on the tuning user,
//! the other was never tuned on), and the component's `context`, the one
//! every host calls, injects what the scorer counts. Needs the model files
//! (`.ci/run` installs them and sets `MNEMO_MODEL_DIR`).

use std::process::{Command, Stdio};

use crate::ok;

#[test]
fn the_context_sets_score_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .current_dir(root)
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .args(["eval", "context", "--json"])
        .env("MNEMO_DATA_DIR", dir.path())
        .env_remove("MNEMO_EMBEDDER")
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo-lab");
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    assert_eq!(json["model"], "all-MiniLM-L6-v2", "{json}");
    assert_eq!(
        json["context_differs"], 0,
        "context injects what was counted: {json}"
    );
    let sets = json["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2);
    let memories: u64 = sets.iter().map(|s| s["memories"].as_u64().unwrap()).sum();
    let prompts: u64 = sets.iter().map(|s| s["prompts"].as_u64().unwrap()).sum();
    let off_topic: u64 = sets.iter().map(|s| s["off_topic"].as_u64().unwrap()).sum();
    assert!(
        memories >= 300 && prompts >= 150 && off_topic >= 40,
        "{json}"
    );
    // docs/evaluation.md, "Context injection": (user, mode, recall,
    // precision, share of off-topic prompts injecting).
    for (user, mode, recall, precision, off) in [
        ("tomas", "blend", 0.775, 0.486, 0.091),
        ("aiko", "blend", 0.663, 0.655, 0.0),
        ("aiko", "semantic", 0.651, 0.653, 0.0),
    ] {
        let set = sets.iter().find(|s| s["user"] == user).unwrap();
        let m = &set["modes"][mode];
        let (r, p, o) = (
            m["recall"].as_f64().unwrap(),
            m["precision"].as_f64().unwrap(),
            m["off_topic_injecting"].as_f64().unwrap(),
        );
        assert!(
            r >= recall - 0.005 && p >= precision - 0.005 && o <= off + 0.005,
            "{user} {mode}: R {r:.3} P {p:.3} off-topic {o:.3}: {m}"
        );
    }
}
