//! `core_exports`: arbitrary records into every export of the core
//! component (the WIT boundary), a sequence of calls per input on one
//! store; `import_lines`: arbitrary JSON lines into `mnemo import`'s path.
//!
//! Whatever the records hold (NaN scores, huge limits, empty or unknown
//! names, control characters), each call answers or fails with a typed
//! error; a failed call writes nothing (it is one transaction).

use arbitrary::{Arbitrary, Unstructured};
use mnemo_core::model::*;

use mnemo_host::runtime::CallError;

use crate::engine::{Harness, rows, typed, with_mnemo};

/// Whether the call succeeded (see [`typed`]).
fn done<T>(what: &str, r: Result<T, CallError>) -> bool {
    typed(what, r).is_some()
}

/// Which memory a call names: one created earlier, or any text.
#[derive(Arbitrary, Debug)]
enum Pick {
    Known(u16),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Remember(RememberRequest),
    Ingest(Turn),
    Recall(RecallRequest),
    List(ListRequest),
    Get(String, Pick),
    Update(String, Pick, MemoryPatch),
    Delete(String, Pick, String),
    Restore(String, Pick),
    Confirm(String, Pick),
    Correct(String, Pick, String),
    History(String, Pick),
    Revert(String, Pick, u32),
    Import(Box<ImportItem>),
    Fade(FadeRequest),
    Consolidate(ConsolidateRequest),
    ConsolidateSessions(String, Vec<String>),
    Review(Option<String>, bool),
    RebuildTopics(Option<String>),
    PlanTopics(String),
    ApplyTopics(TopicPlan),
    Topics(String, Vec<String>),
    Resume(ResumeRequest),
    Context(String, String, Option<String>, u32),
    Reflect(String, bool),
    Recent(String, u32, u32),
    Triggers(String),
    AddFact(FactInput),
    QueryFacts(FactQuery),
    FactGraph(String, String, u32),
    FactConflicts(String),
    Stats(Option<String>),
    EntityInfo(String, String, u32),
    Enrich(u8),
}

impl Harness {
    fn id(&self, ns: &str, pick: &Pick) -> (String, String) {
        match pick {
            Pick::Known(i) if !self.known.is_empty() => {
                self.known[*i as usize % self.known.len()].clone()
            }
            Pick::Known(_) => (ns.to_string(), String::new()),
            Pick::Raw(id) => (ns.to_string(), id.clone()),
        }
    }

    /// One call; `true` when it succeeded.
    fn run(&mut self, op: &Op) -> bool {
        let m = &mut self.m;
        let what = format!("{op:?}");
        match op {
            Op::Remember(req) => {
                if let Some(out) = typed(&what, m.remember(req.clone())) {
                    self.known.push((out.memory.namespace, out.memory.id));
                    return true;
                }
                false
            }
            Op::Ingest(t) => done(&what, m.ingest(t.clone())),
            Op::Recall(req) => done(&what, m.recall(req.clone())),
            Op::List(req) => done(&what, m.list(req.clone())),
            Op::Import(item) => done(&what, m.import(item.as_ref().clone())),
            Op::Fade(req) => done(&what, m.fade(req.clone())),
            Op::Consolidate(req) => done(&what, m.consolidate(req.clone())),
            Op::ConsolidateSessions(ns, ids) => done(&what, m.consolidate_sessions(ns, ids)),
            Op::Review(ns, dry) => done(&what, m.review(ns.as_deref(), *dry)),
            Op::RebuildTopics(ns) => done(&what, m.rebuild_topics(ns.as_deref())),
            Op::PlanTopics(ns) => done(&what, m.plan_topics(ns)),
            Op::ApplyTopics(plan) => done(&what, m.apply_topics(plan.clone())),
            Op::Topics(ns, ids) => done(&what, m.topics(ns, ids)),
            Op::Resume(req) => done(&what, m.resume(req.clone())),
            Op::Context(ns, prompt, session, limit) => {
                done(&what, m.context(ns, prompt, session.as_deref(), *limit))
            }
            Op::Reflect(ns, force) => done(&what, m.reflect(ns, *force)),
            Op::Recent(ns, hours, limit) => done(&what, m.recent(ns, *hours, *limit)),
            Op::Triggers(ns) => done(&what, m.triggers(ns)),
            Op::AddFact(f) => done(&what, m.add_fact(f.clone())),
            Op::QueryFacts(q) => done(&what, m.query_facts(q.clone())),
            Op::FactGraph(ns, e, hops) => done(&what, m.fact_graph(ns, e, *hops)),
            Op::FactConflicts(ns) => done(&what, m.fact_conflicts(ns)),
            Op::Stats(ns) => done(&what, m.stats(ns.as_deref())),
            Op::EntityInfo(ns, name, limit) => done(&what, m.entity_info(ns, name, *limit)),
            Op::Enrich(limit) => done(&what, m.enrich(u32::from(*limit))),
            Op::Get(ns, p) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.get(&ns, &id))
            }
            Op::Update(ns, p, patch) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.update(&ns, &id, patch.clone()))
            }
            Op::Delete(ns, p, reason) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.delete(&ns, &id, reason))
            }
            Op::Restore(ns, p) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.restore(&ns, &id))
            }
            Op::Confirm(ns, p) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.confirm(&ns, &id))
            }
            Op::Correct(ns, p, content) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.correct(&ns, &id, content))
            }
            Op::History(ns, p) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.history(&ns, &id))
            }
            Op::Revert(ns, p, seq) => {
                let (ns, id) = self.id(ns, p);
                done(&what, self.m.revert(&ns, &id, *seq))
            }
        }
    }
}

/// Calls the core's exports with arbitrary records, up to eight per input.
pub fn core_exports(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(ops) = u
        .arbitrary_iter::<Op>()
        .and_then(|it| it.take(8).collect::<Result<Vec<_>, _>>())
    else {
        return;
    };
    with_mnemo(|h| {
        for op in &ops {
            let before = rows(&h.m);
            if !h.run(op) {
                assert_eq!(before, rows(&h.m), "a failed call wrote: {op:?}");
            }
        }
    });
}

/// Imports the input as JSON lines: as it is, or (first byte odd) as
/// arbitrary export items written out as lines. An import that fails
/// writes nothing; one that succeeds can be exported.
pub fn import_lines(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = if mode % 2 == 1 {
        let mut u = Unstructured::new(rest);
        let Ok(items) = u.arbitrary::<Vec<ImportItem>>() else {
            return;
        };
        items
            .iter()
            .filter_map(|i| serde_json::to_string(i).ok())
            .collect::<Vec<_>>()
            .join("\n")
            .into_bytes()
    } else {
        rest.to_vec()
    };
    with_mnemo(|h| {
        let before = rows(&h.m);
        let out = mnemo_host::transfer::import(&mut h.m, std::io::Cursor::new(&text), |_, _| {});
        match out {
            Ok(_) => {
                let mut dump = Vec::new();
                mnemo_host::transfer::export(&h.m, &mut dump, None, false)
                    .expect("what was imported exports");
            }
            Err(e) => {
                let e = format!("{e:#}");
                assert!(!e.contains("trapped"), "the core trapped: {e}");
                assert_eq!(before, rows(&h.m), "a failed import wrote: {e}");
            }
        }
    });
}
