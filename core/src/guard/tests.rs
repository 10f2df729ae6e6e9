//! The guard against a scripted LLM and a clock the test moves: items wait
//! out their backoff and park, circuits open and a probe closes them, and
//! no budget is ever exceeded.

use crate::Engine;
use crate::model::*;
use crate::testing::FakePorts;

const HOUR: i64 = 3_600_000;

fn engine(policy: LlmPolicy) -> Engine<FakePorts> {
    let e = Engine::with_policy(FakePorts::default(), policy);
    e.ports().llm.level.set(Some(LlmLevel::Full));
    e
}

fn policy(circuit_failures: u32, retry_limit: u32, budgets: Vec<LlmBudget>) -> LlmPolicy {
    LlmPolicy {
        circuit_failures,
        circuit_cooldown_ms: HOUR,
        retry_base_ms: HOUR,
        retry_limit,
        budgets,
    }
}

fn cap(scope: BudgetScope, per_namespace: bool, calls: u32) -> LlmBudget {
    LlmBudget {
        scope,
        per_namespace,
        calls: Some(calls),
        tokens: None,
    }
}

fn say(e: &Engine<FakePorts>, ns: &str, session: &str) {
    e.ingest(Turn {
        namespace: ns.into(),
        session_id: session.into(),
        role: "user".into(),
        content: format!("I moved to the city of {session} last spring"),
        event_time: None,
        attributes: None,
    })
    .expect("ingest");
    let clock = &e.ports().clock;
    clock.now.set(clock.now.get() + 1_000);
}

fn good(e: &Engine<FakePorts>, n: usize) {
    for i in 0..n {
        e.ports().llm.script(
            LlmLevel::Full,
            LlmComponent::Extract,
            &format!(
                r#"{{"facts": [{{"content": "The user moved to city number {i}", "kind": "semantic", "turns": [0]}}]}}"#
            ),
        );
    }
}

fn cycle(e: &Engine<FakePorts>) -> ConsolidateReport {
    e.consolidate(ConsolidateRequest {
        session_idle_minutes: Some(0),
        ..Default::default()
    })
    .expect("consolidate")
}

fn extract_calls(e: &Engine<FakePorts>) -> usize {
    e.ports()
        .llm
        .requests
        .borrow()
        .iter()
        .filter(|r| r.component == LlmComponent::Extract)
        .count()
}

fn pending(e: &Engine<FakePorts>) -> usize {
    use crate::ports::Storage;
    e.ports().storage.pending_sessions("", None).unwrap().len()
}

fn extract_circuit(e: &Engine<FakePorts>) -> CircuitState {
    let state = e.llm_state(None).unwrap();
    let found = state
        .circuits
        .into_iter()
        .find(|c| c.component == LlmComponent::Extract);
    found.expect("the extraction's circuit")
}

fn advance(e: &Engine<FakePorts>, ms: i64) {
    let clock = &e.ports().clock;
    clock.now.set(clock.now.get() + ms);
}

#[test]
fn a_failed_session_waits_out_its_backoff_then_parks_until_retried() {
    // Nothing scripted: every extraction is the provider's `llm` error.
    let e = engine(policy(100, 3, vec![]));
    say(&e, "default", "s1");
    cycle(&e);
    assert_eq!(extract_calls(&e), 1);
    let w = e.llm_state(None).unwrap().waiting;
    assert_eq!(w.len(), 1);
    assert_eq!(
        (w[0].step, w[0].id.as_str(), w[0].failures),
        (LlmComponent::Extract, "s1", 1)
    );
    // Within the backoff a cycle does not ask again.
    let r = cycle(&e);
    assert_eq!(extract_calls(&e), 1, "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("wait for a retry")),
        "{r:?}"
    );
    // The backoff doubles: 1 h, then 2 h; the third failure parks it.
    advance(&e, HOUR);
    cycle(&e);
    assert_eq!(extract_calls(&e), 2);
    advance(&e, HOUR);
    cycle(&e);
    assert_eq!(extract_calls(&e), 2, "the second wait is two hours");
    advance(&e, HOUR);
    cycle(&e);
    assert_eq!(extract_calls(&e), 3);
    let w = e.llm_state(Some("default")).unwrap().waiting;
    assert_eq!((w[0].failures, w[0].retry_at), (3, None), "parked: {w:?}");
    advance(&e, 1000 * HOUR);
    cycle(&e);
    assert_eq!(
        extract_calls(&e),
        3,
        "a parked item is never tried by a cycle"
    );
    assert_eq!(pending(&e), 1, "and never dropped");
    // By hand: due now, and once it goes through its record is gone.
    assert_eq!(e.retry_waiting(None, Some("s1")).unwrap(), 1);
    good(&e, 1);
    let r = cycle(&e);
    assert_eq!(r.sessions, ["s1"], "{r:?}");
    // (The topic naming, never scripted here, waits on its own account.)
    let waiting = e.llm_state(None).unwrap().waiting;
    assert!(
        waiting.iter().all(|w| w.step != LlmComponent::Extract),
        "{waiting:?}"
    );
}

#[test]
fn a_circuit_opens_after_k_failures_and_a_probe_closes_it() {
    let mut p = policy(2, 100, vec![]);
    p.retry_base_ms = 0;
    let e = engine(p);
    for s in ["s1", "s2", "s3", "s4"] {
        say(&e, "default", s);
    }
    let r = cycle(&e);
    assert_eq!(extract_calls(&e), 2, "two failures open the circuit: {r:?}");
    let c = extract_circuit(&e);
    assert!(c.open && c.failures == 2, "{c:?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("circuit open")),
        "{r:?}"
    );
    // Within the cool-down nothing is asked.
    cycle(&e);
    assert_eq!(extract_calls(&e), 2);
    // After it, one probe; it fails, so the circuit opens for another one.
    advance(&e, HOUR);
    cycle(&e);
    assert_eq!(extract_calls(&e), 3);
    assert!(extract_circuit(&e).open);
    // The model heals: the probe goes through, the circuit closes and the
    // other sessions follow in the same cycle.
    advance(&e, HOUR);
    good(&e, 4);
    let r = cycle(&e);
    assert_eq!(r.sessions.len(), 4, "{r:?}");
    assert_eq!(extract_calls(&e), 7);
    let state = e.llm_state(None).unwrap();
    assert!(
        state
            .circuits
            .iter()
            .all(|c| c.component != LlmComponent::Extract),
        "{state:?}"
    );
}

#[test]
fn budgets_cap_the_calls_and_the_oldest_sessions_go_first() {
    let e = engine(policy(
        100,
        100,
        vec![
            cap(BudgetScope::Cycle, false, 2),
            cap(BudgetScope::Hour, false, 3),
            cap(BudgetScope::Hour, true, 1),
        ],
    ));
    for s in ["s1", "s2", "s3", "s4"] {
        say(&e, "default", s);
    }
    say(&e, "other", "t1");
    say(&e, "other", "t2");
    good(&e, 10);
    let r = cycle(&e);
    // One call per namespace this hour: the oldest session of each.
    assert_eq!(r.sessions, ["s1", "t1"], "{r:?}");
    assert_eq!(extract_calls(&e), 2);
    assert!(
        r.warnings.iter().any(|w| w.contains("LLM budget reached")),
        "{r:?}"
    );
    let r = cycle(&e);
    assert!(r.sessions.is_empty(), "{r:?}");
    assert_eq!(extract_calls(&e), 2, "the namespaces' hour is spent");
    advance(&e, HOUR);
    let r = cycle(&e);
    assert_eq!(r.sessions, ["s2", "t2"]);
    advance(&e, HOUR);
    // Without the per-namespace cap, the cycle's 2 calls bind.
    e.configure_llm(policy(100, 100, vec![cap(BudgetScope::Cycle, false, 2)]));
    let r = cycle(&e);
    assert_eq!(r.sessions, ["s3", "s4"], "{r:?}");
    assert_eq!(extract_calls(&e), 6);
    // A refusal is not a failure: nothing waits.
    assert!(e.llm_state(None).unwrap().waiting.is_empty());
}

#[test]
fn a_budget_of_nothing_makes_no_call_and_records_nothing() {
    let e = engine(policy(100, 100, vec![cap(BudgetScope::Cycle, false, 0)]));
    say(&e, "default", "s1");
    let r = cycle(&e);
    assert_eq!(
        extract_calls(&e),
        0,
        "a budget of 0 calls makes none: {r:?}"
    );
    assert!(e.llm_state(None).unwrap().waiting.is_empty());
    assert_eq!(pending(&e), 1);
}

#[test]
fn a_token_budget_counts_what_the_answers_cost() {
    // Each scripted answer costs 2 tokens; a cap of 3 lets a second call
    // start (2 spent) and refuses the third (4 spent).
    let e = engine(policy(
        100,
        100,
        vec![LlmBudget {
            scope: BudgetScope::Cycle,
            per_namespace: true,
            calls: None,
            tokens: Some(3),
        }],
    ));
    for s in ["s1", "s2", "s3"] {
        say(&e, "default", s);
    }
    say(&e, "other", "t1");
    good(&e, 10);
    let r = cycle(&e);
    assert_eq!(r.sessions, ["s1", "s2", "t1"], "{r:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("3 tokens per cycle for namespace `default`")),
        "{r:?}"
    );
}
