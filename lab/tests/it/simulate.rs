//! The short form of the lifecycle simulation (`mnemo-lab simulate lifecycle`),
//! through the real binary: 30 days with an idle week, with the LLM off
//! and with the scripted LLM that answers malformed and truncated output.
//! Nothing told is lost, nothing recalled lately is hidden, Core does not
//! decay, and the day-0 probes are found as well at the end as at the
//! start; and a sweep of six seeds in both modes. The long forms are
//! `mnemo-lab simulate lifecycle --days 90 [--seeds 1..=500]`.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn simulate(llm: &str, env: &[(&str, &str)]) -> (Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo-lab"));
    cmd.env("MNEMO_CACHE_DIR", crate::cache_dir());
    cmd.args([
        "simulate",
        "lifecycle",
        "--days",
        "30",
        "--seed",
        "7",
        "--llm",
        llm,
        "--json",
    ])
    .env("MNEMO_DATA_DIR", dir.path())
    .env_remove("MNEMO_FADE_LAYERS")
    .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run mnemo");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out, report)
}

fn assert_keeps_everything(report: &Value) {
    for verdict in ["lost", "hidden_recent", "core_decayed"] {
        assert_eq!(report[verdict], 0, "{verdict}: {report:#}");
    }
    let recall: Vec<f64> = report["probe_recall"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    assert!(report["probes"].as_u64().unwrap() >= 10, "{report:#}");
    assert!(recall.len() >= 2, "{report:#}");
    assert!(
        recall[recall.len() - 1] >= recall[0] - 0.05,
        "probe recall fell: {recall:?}"
    );
    assert!(report["statements"].as_u64().unwrap() > 50, "{report:#}");
    assert!(
        report["probe_inactive"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n == 0),
        "a probe's answer left the active memories: {report:#}"
    );
    let last = report["rows"].as_array().unwrap().last().unwrap();
    assert!(
        last["promoted"].as_u64().unwrap() > 0,
        "the cycles ran: {last}"
    );
}

#[test]
fn thirty_days_with_the_llm_off_lose_nothing() {
    let (out, report) = simulate("off", &[]);
    assert!(out.status.success(), "{report:#}");
    assert_keeps_everything(&report);
    assert_eq!(report["llm_calls"], 0);
}

#[test]
fn thirty_days_with_a_faulty_scripted_llm_lose_nothing() {
    let (out, report) = simulate("scripted", &[]);
    assert!(out.status.success(), "{report:#}");
    assert_keeps_everything(&report);
    assert!(
        report["llm_faults"].as_u64().unwrap() > 0,
        "faults were served"
    );
    let last = report["rows"].as_array().unwrap().last().unwrap();
    assert!(
        last["merged"].as_u64().unwrap() > 0,
        "LLM merges ran: {last}"
    );
}

#[test]
fn the_verdicts_can_fail_core_fading_as_in_round_one_is_caught() {
    // Round 1 faded every layer: the simulation must say so, and exit 1.
    let (out, report) = simulate("off", &[("MNEMO_FADE_LAYERS", "buffer,working,core")]);
    assert!(report["core_decayed"].as_u64().unwrap() > 0, "{report:#}");
    assert_eq!(out.status.code(), Some(1));
}

/// The short form of the sweep (`--seeds`): six seeds, each with the LLM
/// off and with the scripted one, 30 days; one row per run, all zero.
#[test]
fn a_sweep_of_six_seeds_in_both_modes_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mnemo-lab"))
        .env("MNEMO_CACHE_DIR", crate::cache_dir())
        .env("MNEMO_DATA_DIR", dir.path())
        .env_remove("MNEMO_FADE_LAYERS")
        .args([
            "simulate",
            "lifecycle",
            "--days",
            "30",
            "--seeds",
            "1..=6",
            "--json",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run mnemo-lab");
    let rows: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 12, "{rows:#?}");
    for r in rows {
        for verdict in ["lost", "hidden_recent", "core_decayed"] {
            assert_eq!(r[verdict], 0, "{verdict}: {r}");
        }
        assert!(r["error"].is_null(), "{r}");
        assert!(r["probe_recall"].as_f64().unwrap() >= 0.8, "{r}");
    }
    assert!(out.status.success());
}
