//! The server's readers, planner and writer (`host/src/server/engine.rs`),
//! over real HTTP against the real binary: reads and writes answer while a
//! cycle waits on a slow LLM; a cycle applies what it planned and leaves
//! what changed meanwhile for the next one; a client reads its own writes
//! whichever reader serves it; what a read causes (access counts, renewals,
//! injection decisions) reaches the store; a background embedding never
//! stores a vector for text that changed while it was being computed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use mnemo_core::ports::Storage as _;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::llm_server::{Scripted, tool_reply};
use common::server::*;
use common::{open, remember};
use mnemo_core::model::*;
use mnemo_core::ports::Embedder;
use serde_json::{Value, json};

/// A request that gives up after `secs` instead of hanging the test.
fn with_timeout(req: ureq::Request, secs: u64) -> ureq::Request {
    req.timeout(Duration::from_secs(secs))
}

/// A gate the scripted LLM waits at until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn wait(&self) {
        let (open, cv) = &*self.0;
        let mut o = open.lock().unwrap();
        while !*o {
            o = cv.wait(o).unwrap();
        }
    }
    fn open(&self) {
        let (open, cv) = &*self.0;
        *open.lock().unwrap() = true;
        cv.notify_all();
    }
}

#[test]
fn reads_and_writes_answer_while_a_cycle_waits_on_a_slow_llm() {
    let gate = Gate::default();
    let llm = Scripted::start();
    let g = gate.clone();
    llm.respond_with(move |_| {
        g.wait();
        tool_reply(
            "save_facts",
            json!({"facts": [{"content": "The user went to the harbour", "turns": [0]}]}),
        )
    });
    let env = llm_env("auto", &llm.base, &[("MNEMO_LLM_TIMEOUT_SECS", "120")]);
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let (st, kept) = post(
        &s,
        "/memories",
        json!({"content": "The deploy key rotates every Friday"}),
    );
    assert_eq!(st, 201, "{kept}");
    for n in 0..3 {
        let (st, _) = post(
            &s,
            "/episodes",
            json!({"session_id": "s1", "role": "user", "content": format!("walked to the harbour, day {n}")}),
        );
        assert_eq!(st, 201);
    }
    // A cycle that distils the session: it is now inside an LLM call that
    // does not answer until the gate opens.
    let base = s.base.clone();
    let cycle = std::thread::spawn(move || {
        call(
            with_timeout(ureq::post(&format!("{base}/consolidate")), 120),
            Some(r#"{"session_idle_minutes": 0}"#),
        )
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!llm.requests().is_empty(), "the cycle reached its LLM call");

    // Every read answers while the writer is held.
    let (st, v) = call(
        with_timeout(ureq::post(&format!("{}/recall", s.base)), 20),
        Some(&json!({"query": "when does the deploy key rotate"}).to_string()),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["hits"][0]["id"], kept["id"]);
    let id = kept["id"].as_str().unwrap();
    for path in [
        format!("/memories/{id}"),
        "/memories?limit=5".to_string(),
        "/stats".to_string(),
        "/sessions".to_string(),
        "/resume".to_string(),
        "/health".to_string(),
    ] {
        let (st, v) = call(
            with_timeout(ureq::get(&format!("{}{path}", s.base)), 20),
            None,
        );
        assert_eq!(st, 200, "{path}: {v}");
    }
    let (st, v) = call(
        with_timeout(ureq::post(&format!("{}/context", s.base)), 20),
        Some(&json!({"prompt": "deploy key rotation"}).to_string()),
    );
    assert_eq!(st, 200, "{v}");
    // And so does every write: the cycle's LLM calls hold no lock.
    let (st, v) = call(
        with_timeout(ureq::post(&format!("{}/memories", s.base)), 20),
        Some(&json!({"content": "The boiler is serviced in March"}).to_string()),
    );
    assert_eq!(st, 201, "{v}");
    let (st, v) = call(
        with_timeout(ureq::post(&format!("{}/episodes", s.base)), 20),
        Some(&json!({"session_id": "s2", "role": "user", "content": "bought rope"}).to_string()),
    );
    assert_eq!(st, 201, "{v}");
    assert!(!cycle.is_finished(), "the cycle was still waiting");

    gate.open();
    let (st, report) = cycle.join().unwrap();
    assert_eq!(st, 200, "{report}");
    // The session was distilled with the answer planned for it.
    assert_eq!(report["sessions"], json!(["s1"]), "{report}");
    assert_eq!(report["facts_added"], 1, "{report}");
}

/// Every `created_at` in an export moved a day back.
fn a_day_older(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                match (k.as_str(), x.as_i64()) {
                    ("created_at" | "modified_at" | "event_time", Some(t)) => {
                        *x = json!(t - 86_400_000)
                    }
                    _ => a_day_older(x),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(a_day_older),
        _ => {}
    }
}

#[test]
fn a_cycle_applies_what_it_planned_and_leaves_what_changed_meanwhile() {
    // Two Buffer memories a day old, one per namespace, so the triage asks
    // the LLM once per namespace.
    let seed = start_with(tempfile::tempdir().unwrap(), None, &NO_CRON);
    let mut ids = Vec::new();
    for (ns, text) in [
        ("alpha", "The harbour master is called Ines"),
        ("beta", "The ferry leaves at seven"),
    ] {
        let (st, v) = call(
            ureq::post(&format!("{}/memories", seed.base)).set("X-Namespace", ns),
            Some(&json!({"content": text}).to_string()),
        );
        assert_eq!(st, 201);
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    let dump = ureq::get(&format!("{}/export", seed.base))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    let dump: String = dump
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            a_day_older(&mut v);
            format!("{v}\n")
        })
        .collect();

    // The LLM promotes every memory it is shown, once the gate opens.
    let gate = Gate::default();
    let llm = Scripted::start();
    let g = gate.clone();
    llm.respond_with(move |req| {
        if req.body["tools"][0]["function"]["name"] != "triage_decisions" {
            return common::llm_server::Reply::json(500, json!({"error": "not scripted"}));
        }
        g.wait();
        let prompt: String = req.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        // Each memory is shown as `[short id] ...`.
        let decisions: Vec<Value> = prompt
            .lines()
            .filter_map(|l| l.strip_prefix('[')?.split_once(']'))
            .map(|(id, _)| json!({"id": id, "decision": "promote", "kind": "semantic", "reason": "useful"}))
            .collect();
        tool_reply("triage_decisions", json!({ "decisions": decisions }))
    });
    // One call at a time: the plan is one pass, so the edit below lands
    // between planning and applying. (Planned in waves, a pass after the
    // edit would read the new text and ask about it instead.)
    let env = llm_env(
        "full",
        &llm.base,
        &[
            ("MNEMO_LLM_TIMEOUT_SECS", "120"),
            ("MNEMO_LLM_CONCURRENCY", "1"),
        ],
    );
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let (st, v) = call(ureq::post(&format!("{}/import", s.base)), Some(&dump));
    assert_eq!(st, 200, "{v}");

    let base = s.base.clone();
    let cycle = std::thread::spawn(move || {
        call(
            with_timeout(ureq::post(&format!("{base}/consolidate")), 120),
            Some("{}"),
        )
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!llm.requests().is_empty(), "the plan reached the triage");
    // While the plan waits on the LLM, beta's memory is edited.
    let (st, v) = call(
        with_timeout(
            ureq::patch(&format!("{}/memories/{}", s.base, ids[1])).set("X-Namespace", "beta"),
            20,
        ),
        Some(&json!({"content": "The ferry leaves at eight"}).to_string()),
    );
    assert_eq!(st, 200, "{v}");
    gate.open();
    let (st, report) = cycle.join().unwrap();
    assert_eq!(st, 200, "{report}");

    let get = |ns: &str, id: &str| {
        call(
            ureq::get(&format!("{}/memories/{id}", s.base)).set("X-Namespace", ns),
            None,
        )
        .1
    };
    // Alpha's verdict was about the text that is there: applied.
    assert_eq!(get("alpha", &ids[0])["layer"], "working", "{report}");
    // Beta's was about the old text: left for the next cycle, with a warning.
    let beta = get("beta", &ids[1]);
    assert_eq!(
        (beta["layer"].as_str(), beta["content"].as_str()),
        (Some("buffer"), Some("The ferry leaves at eight")),
        "{report}"
    );
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("left for the next cycle")),
        "{report}"
    );
    // The next cycle judges the new text.
    let (st, report) = call(
        with_timeout(ureq::post(&format!("{}/consolidate", s.base)), 120),
        Some("{}"),
    );
    assert_eq!(st, 200, "{report}");
    assert_eq!(get("beta", &ids[1])["layer"], "working", "{report}");
}

#[test]
fn every_client_reads_its_own_writes() {
    let s = start_with(tempfile::tempdir().unwrap(), None, &NO_CRON);
    let base = s.base.clone();
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let base = base.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let content = format!("client {c} stored fact number {i} about zebra{c}x{i}");
                    let (st, v) = call(
                        ureq::post(&format!("{base}/memories")),
                        Some(&json!({"content": content}).to_string()),
                    );
                    assert_eq!(st, 201, "{v}");
                    let id = v["id"].as_str().unwrap().to_string();
                    // Read back at once, by id and by search, from whichever
                    // reader is free.
                    let (st, got) = call(ureq::get(&format!("{base}/memories/{id}")), None);
                    assert_eq!((st, got["content"].as_str()), (200, Some(content.as_str())));
                    let (st, found) = call(
                        ureq::post(&format!("{base}/recall")),
                        Some(&json!({"query": format!("zebra{c}x{i}"), "dry": true}).to_string()),
                    );
                    assert_eq!(st, 200);
                    assert_eq!(found["hits"][0]["id"], Value::String(id.clone()), "{found}");
                    // An edit is read back too.
                    let edited = format!("{content} (edited)");
                    let (st, _) = call(
                        ureq::patch(&format!("{base}/memories/{id}")),
                        Some(&json!({"content": edited}).to_string()),
                    );
                    assert_eq!(st, 200);
                    let (_, got) = call(ureq::get(&format!("{base}/memories/{id}")), None);
                    assert_eq!(got["content"].as_str(), Some(edited.as_str()));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let (_, stats) = call(ureq::get(&format!("{base}/stats")), None);
    assert_eq!(stats["active"], 100, "{stats}");
}

#[test]
fn what_a_read_causes_reaches_the_store() {
    let s = start_with(tempfile::tempdir().unwrap(), None, &NO_CRON);
    let (_, kept) = post(
        &s,
        "/memories",
        json!({"content": "The office plants are watered on Mondays"}),
    );
    let id = kept["id"].as_str().unwrap();
    let (_, r) = post(&s, "/recall", json!({"query": "office plants watered"}));
    assert_eq!(r["hits"][0]["access_count"], 1, "{r}");
    let (_, c) = post(
        &s,
        "/context",
        json!({"prompt": "watering the office plants"}),
    );
    assert_eq!(c["memories"][0]["id"], kept["id"], "{c}");
    // The writer applies them just after the replies.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut stored, mut injected) = (Value::Null, Value::Null);
    while Instant::now() < deadline {
        stored = call(ureq::get(&format!("{}/memories/{id}", s.base)), None).1;
        injected = call(
            ureq::get(&format!("{}/decisions?action=inject", s.base)),
            None,
        )
        .1["entries"]
            .clone();
        if stored["access_count"] == 1
            && stored["attributes"]["renewed_at"].is_number()
            && injected.as_array().is_some_and(|a| !a.is_empty())
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stored["access_count"], 1, "{stored}");
    assert!(stored["last_accessed"].is_number(), "{stored}");
    assert!(stored["attributes"]["renewed_at"].is_number(), "{stored}");
    let injected = injected.as_array().cloned().unwrap_or_default();
    assert!(
        injected.iter().any(|d| d["target_id"] == kept["id"]),
        "{injected:?}"
    );
}

#[test]
fn a_burst_of_reads_loses_no_access_count_when_their_effects_share_a_commit() {
    let s = start_with(tempfile::tempdir().unwrap(), None, &NO_CRON);
    let (_, kept) = post(
        &s,
        "/memories",
        json!({"content": "The fire drill is on the first Friday"}),
    );
    let id = kept["id"].as_str().unwrap().to_string();
    // 8 clients × 6 recalls at once: the writer batches what the readers
    // hand it, and every access still lands.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let base = s.base.clone();
            std::thread::spawn(move || {
                for _ in 0..6 {
                    let (st, r) = call(
                        ureq::post(&format!("{base}/recall")),
                        Some(&json!({"query": "fire drill friday"}).to_string()),
                    );
                    assert_eq!(st, 200, "{r}");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stored = Value::Null;
    while Instant::now() < deadline {
        stored = call(ureq::get(&format!("{}/memories/{id}", s.base)), None).1;
        if stored["access_count"] == 48 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(stored["access_count"], 48, "{stored}");
}

#[test]
fn a_background_vector_is_stored_only_for_the_text_it_was_computed_from() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = open(dir.path());
    let edited = remember(&mut m, "", "The boat is moored at pier four").memory;
    let deleted = remember(&mut m, "", "The spare key is under the mat").memory;
    let kept = remember(&mut m, "", "Lunch is at noon on weekdays").memory;
    let info = m.ports().embeddings.info();
    m.ports()
        .store
        .reset_vectors(&info.model, info.dimension)
        .unwrap();
    // The worker's two first steps: find and embed (no lock held)...
    let rows = mnemo_host::backfill::pending(&m.ports().store, 64).unwrap();
    assert_eq!(rows.len(), 3);
    let embedded = mnemo_host::backfill::embed(&m.ports().embeddings, rows).unwrap();
    // ...while the writer edits one row and deletes another.
    m.update(
        "",
        &edited.id,
        MemoryPatch {
            content: Some("The boat is moored at pier nine".into()),
            ..Default::default()
        },
    )
    .unwrap();
    m.delete("", &deleted.id, "test").unwrap();
    m.ports()
        .store
        .reset_vectors(&info.model, info.dimension)
        .unwrap();
    // Only the unchanged row takes its vector.
    assert_eq!(mnemo_host::backfill::store(&mut m, &embedded).unwrap(), 1);
    let with_vector = |m: &mnemo_host::Mnemo, id: &str| {
        m.ports()
            .store
            .get_vectors(Target::Memories, &[id.to_string()])
            .unwrap()
            .len()
    };
    assert_eq!(with_vector(&m, &kept.id), 1);
    assert_eq!(with_vector(&m, &edited.id), 0);
    assert_eq!(with_vector(&m, &deleted.id), 0);
    // The next round embeds the edited text.
    m.backfill_all(64, |_| {}).unwrap();
    let stored = m
        .ports()
        .store
        .get_vectors(Target::Memories, std::slice::from_ref(&edited.id))
        .unwrap();
    let fresh = m
        .ports()
        .embeddings
        .embed_batch(&["The boat is moored at pier nine".to_string()])
        .unwrap();
    assert_eq!(stored[0].1, fresh[0]);
}

#[test]
fn a_provider_failure_met_while_planning_is_reported_as_such() {
    let llm = Scripted::start();
    llm.respond_with(|_| {
        common::llm_server::Reply::json(400, json!({"error": {"message": "model not found"}}))
    });
    let env = llm_env("auto", &llm.base, &[]);
    let s = start_with(tempfile::tempdir().unwrap(), None, &env);
    let (st, _) = post(
        &s,
        "/episodes",
        json!({"session_id": "s1", "role": "user", "content": "I moved to Lisbon in March"}),
    );
    assert_eq!(st, 201);
    let (st, report) = post(&s, "/consolidate", json!({"session_idle_minutes": 0}));
    assert_eq!(st, 200, "{report}");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("s1 not consolidated"), "{report}");
    assert!(!warnings.contains("left for the next cycle"), "{report}");
    // The real run made no call of its own: the rehearsal's one is all.
    assert_eq!(llm.requests().len(), 1, "{report}");
}
