//! mnemo on Postgres + pgvector (issue 16), end to end: the real component
//! over a real Postgres (`common::postgres`), as a library and as
//! `mnemo serve` processes — several on one database.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::server::{NO_CRON, call, post, start_on};
use mnemo_core::model::*;
use mnemo_host::Mnemo;
use serde_json::json;

fn open_pg(url: &str, dir: &std::path::Path) -> Mnemo {
    let mut c = common::config(dir);
    c.db_path = url.into();
    Mnemo::open(&c).unwrap()
}

#[test]
fn the_engine_on_postgres_remembers_recalls_forgets_and_restores() {
    let url = common::postgres::fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let mut m = open_pg(&url, dir.path());
    assert!(m.ports().store.is_postgres());
    let first = common::remember(
        &mut m,
        "alice",
        "Alice's sister lives in Lisbon and teaches piano",
    );
    common::remember(&mut m, "alice", "The quarterly report is due on Friday");
    common::remember(&mut m, "bob", "Bob's sister lives in Oslo");
    // The same text again reinforces, it does not duplicate.
    let again = common::remember(
        &mut m,
        "alice",
        "Alice's sister lives in Lisbon and teaches piano",
    );
    assert_eq!(again.memory.id, first.memory.id);
    m.backfill_all(8, |_| {}).unwrap();

    let r = common::recall(&mut m, "alice", "where does the sister live");
    assert_eq!(r.hits[0].item.id(), first.memory.id, "{:?}", r.hits);
    assert!(r.channels_run.contains(&Channel::Vector));
    assert!(r.channels_run.contains(&Channel::Fts));
    // Namespaces are a hard partition.
    assert!(r.hits.iter().all(|h| !h.item.content().contains("Oslo")));

    m.delete("alice", &first.memory.id, "test").unwrap();
    let r = common::recall(&mut m, "alice", "sister Lisbon");
    assert!(r.hits.iter().all(|h| h.item.id() != first.memory.id));
    m.restore("alice", &first.memory.id).unwrap();
    let r = common::recall(&mut m, "alice", "sister Lisbon");
    assert_eq!(r.hits[0].item.id(), first.memory.id);

    // Turns, indexed with the turn before them.
    for (i, text) in [
        "What instrument does your sister teach?",
        "Piano, mostly to children",
    ]
    .into_iter()
    .enumerate()
    {
        m.ingest(Turn {
            namespace: "alice".into(),
            session_id: "s1".into(),
            role: if i == 0 { "user" } else { "assistant" }.into(),
            content: text.into(),
            event_time: Some(1_700_000_000_000 + i as i64),
            attributes: None,
        })
        .unwrap();
    }
    let r = m
        .recall(RecallRequest {
            namespace: "alice".into(),
            query: "which instrument".into(),
            episodes_only: true,
            ..Default::default()
        })
        .unwrap();
    assert!(
        r.hits.iter().any(|h| h.item.content().starts_with("Piano")),
        "the answer is found by its question: {:?}",
        r.hits
    );
    // An edit changes the text's words: the frequencies BM25 reads follow.
    m.update(
        "alice",
        &first.memory.id,
        MemoryPatch {
            content: Some("Alice's sister moved to Porto".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let mut db = common::postgres::connect(&url);
    let drift = |db: &mut ::postgres::Client| -> i64 {
        db.query_one(
            "WITH truth AS ( \
               SELECT 'memories' AS target, l AS lexeme, COUNT(*) AS rows FROM memories, \
                      unnest(mnemo_lexemes(fts, ''::tsvector)) l GROUP BY l \
               UNION ALL \
               SELECT 'episodes', l, COUNT(*) FROM episodes, \
                      unnest(mnemo_lexemes(fts, fts_context)) l GROUP BY l), \
             kept AS (SELECT target, lexeme, SUM(rows) AS rows FROM \
               (SELECT * FROM fts_df UNION ALL SELECT * FROM fts_df_delta) s \
               GROUP BY target, lexeme HAVING SUM(rows) > 0) \
             SELECT (SELECT COUNT(*) FROM (SELECT * FROM truth EXCEPT SELECT * FROM kept) a) \
                  + (SELECT COUNT(*) FROM (SELECT * FROM kept EXCEPT SELECT * FROM truth) b)",
            &[],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(drift(&mut db), 0, "document frequencies match the rows");
    m.ports().store.fold_counts().unwrap();
    assert_eq!(drift(&mut db), 0, "and still do once folded");
    let pending: i64 = db
        .query_one("SELECT COUNT(*) FROM fts_df_delta", &[])
        .unwrap()
        .get(0);
    assert_eq!(pending, 0);
    m.backfill_all(8, |_| {}).unwrap();
    let health = m.ports().store.integrity().unwrap();
    assert_eq!((health.orphan_links, health.missing_vectors), (0, 0));
    assert_eq!(health.memories, 3);
}

/// Two `mnemo serve` processes on one Postgres database serve the same
/// memory while both run a consolidation cycle every minute: a write
/// through one is found through the other, both ways, and each scheduled
/// minute's cycle runs on one of them only.
#[test]
fn two_servers_on_one_postgres_serve_the_same_memory() {
    let url = common::postgres::fresh_database();
    let mut env: Vec<(&str, &str)> = NO_CRON.to_vec();
    env.retain(|(k, _)| *k != "MNEMO_CRON_CONSOLIDATE");
    env.push(("MNEMO_CRON_CONSOLIDATE", "* * * * *"));
    let a = start_on(tempfile::tempdir().unwrap(), &url, None, &env);
    let b = start_on(tempfile::tempdir().unwrap(), &url, None, &env);
    let (st, v) = post(
        &a,
        "/memories",
        json!({"content": "The staging database moved to Frankfurt"}),
    );
    assert_eq!(st, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_string();
    let (st, v) = post(
        &b,
        "/recall",
        json!({"query": "where is the staging database"}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["hits"][0]["id"], id.as_str(), "{v}");

    let (_, v) = post(
        &b,
        "/memories",
        json!({"content": "Deploys freeze on Fridays"}),
    );
    let other = v["id"].as_str().unwrap().to_string();
    let (_, v) = call(ureq::get(&format!("{}/memories/{other}", a.base)), None);
    assert_eq!(v["content"], "Deploys freeze on Fridays", "{v}");
    let (_, v) = call(ureq::get(&format!("{}/health", a.base)), None);
    assert_eq!(v["status"], "ok", "{v}");

    // Both servers tick every 10 s; the first minute's cycle runs once.
    let scheduled = || -> Vec<i64> {
        let (_, v) = call(
            ureq::get(&format!("{}/decisions?action=scheduled&limit=100", b.base)),
            None,
        );
        v.as_array()
            .or_else(|| v["entries"].as_array())
            .map(|d| d.iter().filter_map(|e| e["at"].as_i64()).collect())
            .unwrap_or_default()
    };
    let started = std::time::Instant::now();
    while scheduled().is_empty() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(150),
            "no scheduled cycle ran"
        );
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    // Long enough for the other server's ticks in the same minute.
    std::thread::sleep(std::time::Duration::from_secs(25));
    let runs = scheduled();
    let mut minutes: Vec<i64> = runs.iter().map(|at| at / 60_000).collect();
    minutes.sort_unstable();
    let before = minutes.len();
    minutes.dedup();
    assert_eq!(minutes.len(), before, "a minute ran twice: {runs:?}");
    // And the servers still serve the same memory.
    let (_, v) = post(&a, "/recall", json!({"query": "deploy freeze"}));
    assert_eq!(v["hits"][0]["id"], other.as_str(), "{v}");
}

/// Servers sharing a database split the background work: one leads each
/// job (and hands it on when its connection ends), and each scheduled
/// minute of a task is claimed by exactly one of them.
#[test]
fn servers_on_one_postgres_run_background_work_once() {
    use mnemo_host::storage::{Lead, PgStore};
    let url = common::postgres::fresh_database();
    let a = PgStore::open(&url).unwrap();
    let b = PgStore::open(&url).unwrap();
    assert!(a.lead(Lead::Backfill));
    assert!(a.lead(Lead::Backfill), "a leader stays the leader");
    assert!(!b.lead(Lead::Backfill));
    assert!(b.lead(Lead::Topics), "each job has its own leader");
    assert!(!a.lead(Lead::Topics));
    drop(a);
    let handed_on = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        b.lead(Lead::Backfill)
    });
    assert!(handed_on, "a leader that goes away hands the job on");

    let c = PgStore::open(&url).unwrap();
    let claims: Vec<(bool, bool)> = (100..103)
        .map(|slot| {
            (
                b.claim_slot("consolidate", slot).unwrap(),
                c.claim_slot("consolidate", slot).unwrap(),
            )
        })
        .collect();
    assert_eq!(claims, vec![(true, false); 3], "each minute runs once");
    assert!(
        c.claim_slot("fade", 100).unwrap(),
        "tasks are claimed apart"
    );
    assert!(
        !b.claim_slot("consolidate", 99).unwrap(),
        "an earlier minute is past"
    );
}

/// `mnemo migrate` copies a store from SQLite to Postgres and back without
/// losing anything: the export of each copy (vectors included) is the
/// export of the original, line for line.
#[test]
fn migrate_copies_a_store_to_postgres_and_back_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.db");
    let export = |db: &str| {
        let mut c = common::config(dir.path());
        c.db_path = db.into();
        let m = Mnemo::open(&c).unwrap();
        let mut out = Vec::new();
        mnemo_host::transfer::export(&m, &mut out, None, true).unwrap();
        String::from_utf8(out).unwrap()
    };
    {
        let mut c = common::config(dir.path());
        c.db_path = file.clone();
        let mut m = Mnemo::open(&c).unwrap();
        let kept = common::remember(&mut m, "alice", "Marta from Lisbon leads the platform team");
        common::remember(&mut m, "alice", "The offsite is in Porto in June");
        let gone = common::remember(&mut m, "bob", "Bob drafts the budget");
        m.update(
            "alice",
            &kept.memory.id,
            MemoryPatch {
                content: Some("Marta from Lisbon leads the data platform team".into()),
                ..Default::default()
            },
        )
        .unwrap();
        m.delete("bob", &gone.memory.id, "wrong person").unwrap();
        for (i, text) in ["Where is the offsite?", "In Porto, the second week of June"]
            .into_iter()
            .enumerate()
        {
            m.ingest(Turn {
                namespace: "alice".into(),
                session_id: "s1".into(),
                role: "user".into(),
                content: text.into(),
                event_time: Some(1_700_000_000_000 + i as i64),
                attributes: None,
            })
            .unwrap();
        }
        m.add_fact(FactInput {
            namespace: "alice".into(),
            subject: "Marta".into(),
            predicate: "lives_in".into(),
            object: "Lisbon".into(),
            ..Default::default()
        })
        .unwrap();
        m.backfill_all(16, |_| {}).unwrap();
    }
    let original = export(&file.to_string_lossy());
    assert!(original.contains("data platform") && original.contains("\"vector\""));

    let pg = common::postgres::fresh_database();
    let run = |from: &str, to: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
            .env("MNEMO_CACHE_DIR", common::cache_dir())
            .args(["migrate", "--from", from, "--to", to, "--json"])
            .env("MNEMO_DATA_DIR", dir.path())
            .env("MNEMO_EMBEDDER", "hash")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let copied = run(&file.to_string_lossy(), &pg);
    assert_eq!(copied["memories"], 3, "{copied}");
    assert_eq!(copied["episodes"], 2, "{copied}");
    assert_eq!(copied["versions"], 1, "{copied}");
    assert_eq!(export(&pg), original, "SQLite → Postgres");

    // A store that is not empty is refused.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .env("MNEMO_CACHE_DIR", common::cache_dir())
        .args(["migrate", "--from", &file.to_string_lossy(), "--to", &pg])
        .env("MNEMO_EMBEDDER", "hash")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not empty"));

    let back = dir.path().join("back.db");
    run(&pg, &back.to_string_lossy());
    assert_eq!(
        export(&back.to_string_lossy()),
        original,
        "Postgres → SQLite"
    );
}

/// One writer at a time across the servers: the same texts remembered
/// through two servers at once are stored once each (dedup reads, then
/// writes — sound only under the database's write lock).
#[test]
fn the_same_text_through_two_servers_at_once_is_stored_once() {
    let url = common::postgres::fresh_database();
    let a = start_on(tempfile::tempdir().unwrap(), &url, None, &NO_CRON);
    let b = start_on(tempfile::tempdir().unwrap(), &url, None, &NO_CRON);
    let texts: Vec<String> = (0..24)
        .map(|i| format!("Standup note {i}: the rollout of service {i} moved to Thursday"))
        .collect();
    std::thread::scope(|s| {
        for base in [&a.base, &b.base, &a.base, &b.base] {
            let texts = &texts;
            s.spawn(move || {
                for t in texts {
                    let (st, v) = call(
                        ureq::post(&format!("{base}/memories")),
                        Some(&json!({ "content": t }).to_string()),
                    );
                    assert!(st == 200 || st == 201, "{st} {v}");
                }
            });
        }
    });
    let (_, v) = call(ureq::get(&format!("{}/stats", a.base)), None);
    assert_eq!(v["active"], texts.len(), "{v}");
}

/// MCP over streamable HTTP is stateless: an agent's client on one server
/// and another's on the second serve the same memory, each call answered
/// by whichever server it reaches (issue 15 and 16 together).
#[tokio::test(flavor = "multi_thread")]
async fn mcp_clients_on_two_servers_share_one_store() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;

    let (a, b) = tokio::task::spawn_blocking(|| {
        let url = common::postgres::fresh_database();
        let a = start_on(tempfile::tempdir().unwrap(), &url, None, &NO_CRON);
        let b = start_on(tempfile::tempdir().unwrap(), &url, None, &NO_CRON);
        (a, b)
    })
    .await
    .unwrap();
    let client = |base: String| async move {
        ().serve(StreamableHttpClientTransport::from_uri(format!(
            "{base}/mcp"
        )))
        .await
        .unwrap()
    };
    let (ca, cb) = (client(a.base.clone()).await, client(b.base.clone()).await);
    let call = |name: &str, args: serde_json::Value| {
        let serde_json::Value::Object(args) = args else {
            unreachable!()
        };
        CallToolRequestParams::new(name.to_string()).with_arguments(args)
    };
    let saved = ca
        .call_tool(call(
            "remember_fact",
            json!({"content": "The VPN rotates its keys monthly"}),
        ))
        .await
        .unwrap();
    let id = saved.structured_content.unwrap()["id"].clone();
    let got = cb
        .call_tool(call("get_memory", json!({"id": id})))
        .await
        .unwrap();
    assert_eq!(
        got.structured_content.unwrap()["content"],
        "The VPN rotates its keys monthly"
    );
    let found = cb
        .call_tool(call("search_memory", json!({"query": "VPN keys"})))
        .await
        .unwrap();
    assert_eq!(found.structured_content.unwrap()["hits"][0]["id"], id);
    ca.cancel().await.unwrap();
    cb.cancel().await.unwrap();
}
