//! Every call of the core's engine export is atomic: a call that fails, or
//! traps anywhere in the middle, leaves the store exactly as it was; calls
//! inside a batch are all-or-nothing. Driven through the real component
//! over a real SQLite file.

use crate::common;

use mnemo_core::CoreError;
use mnemo_core::model::*;
use mnemo_host::Mnemo;
use mnemo_host::runtime::{CallError, Runtime};

/// Everything a call could write, as text: rows of every table that holds
/// state (vectors as their count per table), so two snapshots compare equal
/// only if nothing changed.
#[allow(clippy::unwrap_used)] // a test helper: a failure here is a failed test
fn snapshot(m: &Mnemo) -> Vec<String> {
    let conn = m.ports().store.sqlite().unwrap().connection();
    let mut out = Vec::new();
    for table in [
        "memories",
        "episodes",
        "sessions",
        "entities",
        "entity_aliases",
        "memory_entities",
        "episode_entities",
        "facts",
        "metadata",
        "audit_log",
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY 1"))
            .unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", r.get_ref(i).map(|v| v.data_type())))
                    .zip((0..n).map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                            .unwrap_or_default()
                    }))
                    .map(|(t, v)| format!("{t}:{v}"))
                    .collect();
                Ok(format!("{table}: {}", cells.join("|")))
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    for table in ["vec_memories", "vec_episodes"] {
        let n: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap_or(-1);
        out.push(format!("{table}: {n} rows"));
    }
    let fts: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'paris'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    out.push(format!("fts hits for paris: {fts}"));
    out
}

fn request(text: &str) -> RememberRequest {
    RememberRequest {
        content: text.into(),
        tags: vec!["travel".into()],
        ..Default::default()
    }
}

#[test]
fn a_failing_remember_leaves_no_row_vector_or_link() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    common::remember(&mut m, "", "@alice keeps a diary");
    // Entities are linked after the row and its vector are written: make
    // the second new entity fail, so the call dies with writes behind it.
    m.ports()
        .store
        .sqlite()
        .unwrap()
        .connection()
        .execute_batch(
            "CREATE TRIGGER refuse_entities BEFORE INSERT ON entities \
             WHEN (SELECT COUNT(*) FROM entities) >= 3 \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let before = snapshot(&m);
    let err = m
        .remember(request(
            "met @bob and @carol in #paris, mail carol@example.com",
        ))
        .unwrap_err();
    assert!(
        matches!(&err, CallError::Core(CoreError::Storage(msg)) if msg.contains("injected failure")),
        "{err:?}"
    );
    assert_eq!(
        snapshot(&m),
        before,
        "the failed call left something behind"
    );
    m.ports()
        .store
        .sqlite()
        .unwrap()
        .connection()
        .execute_batch("DROP TRIGGER refuse_entities")
        .unwrap();
    let ok = m
        .remember(request(
            "met @bob and @carol in #paris, mail carol@example.com",
        ))
        .unwrap();
    assert!(ok.created);
    assert_ne!(snapshot(&m), before);
}

#[test]
fn a_trap_anywhere_in_a_call_leaves_the_store_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(dir.path());
    let mut seed = Mnemo::open(&config).unwrap();
    common::remember(&mut seed, "", "@alice keeps a diary in #paris");
    drop(seed);

    // Budgets from far too little to enough, 30% apart: each run traps at a
    // different point of `remember` until one completes.
    let mut fuel = 10_000u64;
    let (mut traps, mut traps_after_a_write) = (0, 0);
    loop {
        let runtime = Runtime::with_fuel(config.cache_dir.as_deref(), Some(fuel)).unwrap();
        let mut m = Mnemo::open_with(&runtime, &config).unwrap();
        let before = snapshot(&m);
        let changes = m
            .ports()
            .store
            .sqlite()
            .unwrap()
            .connection()
            .total_changes();
        match m.remember(request(
            "met @bob and @carol in #paris, mail carol@example.com",
        )) {
            Err(CallError::Trap(message)) => {
                traps += 1;
                if m.ports()
                    .store
                    .sqlite()
                    .unwrap()
                    .connection()
                    .total_changes()
                    > changes
                {
                    traps_after_a_write += 1;
                }
                assert_eq!(
                    snapshot(&m),
                    before,
                    "a trap with {fuel} fuel ({message}) left a partial write"
                );
            }
            Ok(outcome) => {
                assert!(outcome.created);
                break;
            }
            Err(other) => panic!("unexpected error with {fuel} fuel: {other:?}"),
        }
        fuel = fuel * 13 / 10;
        assert!(fuel < 10_000_000_000, "remember never completed");
    }
    assert!(traps > 5, "only {traps} trapped runs");
    assert!(
        traps_after_a_write > 0,
        "no run trapped after the call had written (the test proved nothing)"
    );
}

#[test]
fn a_batch_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = common::open(dir.path());
    let before = snapshot(&m);
    let result = m.atomically(mnemo_host::runtime::Locks::All, |m| -> anyhow::Result<()> {
        m.remember(request("the first of the batch"))?;
        m.remember(request("the second of the batch"))?;
        m.remember(RememberRequest {
            content: String::new(),
            ..Default::default()
        })?;
        Ok(())
    });
    assert!(result.is_err());
    assert_eq!(snapshot(&m), before);
    m.atomically(mnemo_host::runtime::Locks::All, |m| -> anyhow::Result<()> {
        m.remember(request("the first of the batch"))?;
        m.remember(request("the second of the batch"))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(m.stats(None).unwrap().active, 2);
}

/// The LLM usage ledger is the exception: a call that spent tokens and then
/// failed still leaves its ledger rows (written after the rollback).
#[test]
fn the_ledger_survives_a_rolled_back_call() {
    use common::llm_server::{Scripted, chat_reply};

    let dir = tempfile::tempdir().unwrap();
    let s = Scripted::start();
    s.push(chat_reply("not the tool call it asked for", "stop"));
    let mut cfg = common::config(dir.path());
    cfg.llm = common::scripted_llm(&s.base);
    let mut m = Mnemo::open(&cfg).unwrap();
    common::remember(&mut m, "", "the harbour opens at dawn");
    // Recall reinforces its hits after the LLM expanded the query: make that
    // last write fail.
    m.ports()
        .store
        .sqlite()
        .unwrap()
        .connection()
        .execute_batch(
            "CREATE TRIGGER refuse_touch BEFORE UPDATE ON memories \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let before = snapshot(&m);
    let err = m
        .recall(RecallRequest {
            query: "harbour".into(),
            expand: Some(true),
            ..Default::default()
        })
        .unwrap_err();
    assert!(format!("{err}").contains("injected failure"), "{err}");
    assert_eq!(s.requests().len(), 1, "the expansion was asked for");
    assert_eq!(snapshot(&m), before, "the call itself left nothing");
    let ledger: i64 = m
        .ports()
        .store
        .sqlite()
        .unwrap()
        .connection()
        .query_row(
            "SELECT COUNT(*) FROM llm_usage WHERE component = 'expand'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ledger, 1, "the spent call is in the ledger");
}
