//! The engine export, one method per WIT function: each crosses its
//! arguments, runs the call in its transaction (`CoreInstance::call`) and
//! crosses the answer back.

use mnemo_core::Cross;
use mnemo_core::model::*;

use super::transaction::Mode;
use super::{CallError, CoreInstance};
use crate::storage::Locks;

impl CoreInstance {
    pub fn remember(&mut self, req: RememberRequest) -> Result<RememberOutcome, CallError> {
        let mode = Mode::Write(Locks::one(&req.namespace));
        let req = req.cross();
        self.call(mode, |a, s| a.mnemo_core_engine().call_remember(s, &req))
    }

    pub fn ingest(&mut self, turn: Turn) -> Result<IngestOutcome, CallError> {
        let mode = Mode::Write(Locks::one(&turn.namespace));
        let turn = turn.cross();
        self.call(mode, |a, s| a.mnemo_core_engine().call_ingest(s, &turn))
    }

    pub fn recall(&mut self, req: RecallRequest) -> Result<RecallResponse, CallError> {
        let mode = if req.dry {
            Mode::Read
        } else {
            self.effects_only(&req.namespace)
        };
        let req = req.cross();
        let _queries = self.ports().embeddings.searching(); // stores no vector
        self.call(mode, |a, s| a.mnemo_core_engine().call_recall(s, &req))
    }

    pub fn get(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_get(s, namespace, id)
        })
    }

    pub fn list(&mut self, req: ListRequest) -> Result<Vec<Memory>, CallError> {
        let req = req.cross();
        self.call(Mode::Read, |a, s| a.mnemo_core_engine().call_list(s, &req))
    }

    pub fn update(
        &mut self,
        namespace: &str,
        id: &str,
        patch: MemoryPatch,
    ) -> Result<Memory, CallError> {
        let patch = patch.cross();
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_update(s, namespace, id, &patch)
        })
    }

    pub fn delete(&mut self, namespace: &str, id: &str, reason: &str) -> Result<Memory, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_delete(s, namespace, id, reason)
        })
    }

    pub fn restore(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_restore(s, namespace, id)
        })
    }

    pub fn confirm(&mut self, namespace: &str, id: &str) -> Result<Memory, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_confirm(s, namespace, id)
        })
    }

    pub fn correct(
        &mut self,
        namespace: &str,
        id: &str,
        content: &str,
    ) -> Result<Memory, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine()
                .call_correct(s, namespace, id, content)
        })
    }

    pub fn history(&mut self, namespace: &str, id: &str) -> Result<Vec<MemoryVersion>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_history(s, namespace, id)
        })
    }

    pub fn revert(&mut self, namespace: &str, id: &str, seq: u32) -> Result<Memory, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_revert(s, namespace, id, seq)
        })
    }

    pub fn import(&mut self, item: ImportItem) -> Result<ImportOutcome, CallError> {
        // An import file spans namespaces: it holds them all (`transfer.rs`).
        let item = item.cross();
        self.call(Mode::Write(Locks::All), |a, s| {
            a.mnemo_core_engine().call_import(s, &item)
        })
    }

    pub fn fade(&mut self, req: FadeRequest) -> Result<FadeReport, CallError> {
        let req = req.cross();
        self.call(Mode::Write(Locks::All), |a, s| {
            a.mnemo_core_engine().call_fade(s, &req)
        })
    }

    pub fn consolidate(&mut self, req: ConsolidateRequest) -> Result<ConsolidateReport, CallError> {
        let mode = if req.dry {
            Mode::Read
        } else {
            Mode::Write(Locks::of(req.namespace.as_deref()))
        };
        let req = req.cross();
        self.call(mode, |a, s| a.mnemo_core_engine().call_consolidate(s, &req))
    }

    pub fn consolidate_sessions(
        &mut self,
        namespace: &str,
        ids: &[String],
    ) -> Result<ConsolidateReport, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine()
                .call_consolidate_sessions(s, namespace, ids)
        })
    }

    pub fn review(
        &mut self,
        namespace: Option<&str>,
        dry: bool,
    ) -> Result<ReviewReport, CallError> {
        // A project namespace's review reads `default` and may merge into it.
        let mode = if dry {
            Mode::Read
        } else {
            Mode::Write(Locks::with_default(namespace))
        };
        self.call(mode, |a, s| {
            a.mnemo_core_engine().call_review(s, namespace, dry)
        })
    }

    pub fn rebuild_topics(&mut self, namespace: Option<&str>) -> Result<u32, CallError> {
        self.call(Mode::Write(Locks::of(namespace)), |a, s| {
            a.mnemo_core_engine().call_rebuild_topics(s, namespace)
        })
    }

    /// A namespace's new topic tree, computed without writing (`None`: its
    /// cached tree is current). Runs on a reader.
    pub fn plan_topics(&mut self, namespace: &str) -> Result<Option<TopicPlan>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_plan_topics(s, namespace)
        })
    }

    /// Names a plan's new leaves and stores its tree.
    pub fn apply_topics(&mut self, plan: TopicPlan) -> Result<u32, CallError> {
        let locks = Locks::of(Some(plan.namespace.as_str()));
        let plan = plan.cross();
        self.call(Mode::Write(locks), |a, s| {
            a.mnemo_core_engine().call_apply_topics(s, &plan)
        })
    }

    pub fn topics(&mut self, namespace: &str, ids: &[String]) -> Result<Vec<Topic>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_topics(s, namespace, ids)
        })
    }

    pub fn resume(&mut self, req: ResumeRequest) -> Result<ResumeBlock, CallError> {
        // A write: what resume shows renews its life.
        let mode = self.effects_only(&req.namespace);
        let req = req.cross();
        let _queries = self.ports().embeddings.searching(); // stores no vector
        self.call(mode, |a, s| a.mnemo_core_engine().call_resume(s, &req))
    }

    pub fn context(
        &mut self,
        namespace: &str,
        prompt: &str,
        session_id: Option<&str>,
        limit: u32,
    ) -> Result<ContextBlock, CallError> {
        let mode = self.effects_only(namespace);
        let _queries = self.ports().embeddings.searching(); // a recall inside
        self.call(mode, |a, s| {
            a.mnemo_core_engine()
                .call_context(s, namespace, prompt, session_id, limit)
        })
    }

    pub fn reflect(&mut self, namespace: &str, force: bool) -> Result<ReflectOutcome, CallError> {
        self.call(Mode::Write(Locks::one(namespace)), |a, s| {
            a.mnemo_core_engine().call_reflect(s, namespace, force)
        })
    }

    pub fn recent(
        &mut self,
        namespace: &str,
        hours: u32,
        limit: u32,
    ) -> Result<Vec<Memory>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine()
                .call_recent(s, namespace, hours, limit)
        })
    }

    pub fn triggers(&mut self, namespace: &str) -> Result<Vec<(String, u64)>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_triggers(s, namespace)
        })
    }

    pub fn add_fact(&mut self, input: FactInput) -> Result<FactOutcome, CallError> {
        let mode = Mode::Write(Locks::one(&input.namespace));
        let input = input.cross();
        self.call(mode, |a, s| a.mnemo_core_engine().call_add_fact(s, &input))
    }

    pub fn query_facts(&mut self, q: FactQuery) -> Result<Vec<Fact>, CallError> {
        let q = q.cross();
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_query_facts(s, &q)
        })
    }

    pub fn fact_graph(
        &mut self,
        namespace: &str,
        entity: &str,
        hops: u32,
    ) -> Result<Vec<Fact>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine()
                .call_fact_graph(s, namespace, entity, hops)
        })
    }

    pub fn fact_conflicts(&mut self, namespace: &str) -> Result<Vec<(Fact, Fact)>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_fact_conflicts(s, namespace)
        })
    }

    pub fn stats(&mut self, namespace: Option<&str>) -> Result<StoreStats, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_stats(s, namespace)
        })
    }

    pub fn entity_info(
        &mut self,
        namespace: &str,
        name: &str,
        limit: u32,
    ) -> Result<Vec<EntityProfile>, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine()
                .call_entity_info(s, namespace, name, limit)
        })
    }

    pub fn enrich(&mut self, limit: u32) -> Result<EnrichReport, CallError> {
        self.call(Mode::Write(Locks::All), |a, s| {
            a.mnemo_core_engine().call_enrich(s, limit)
        })
    }

    pub fn version(&mut self) -> Result<String, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_version(s).map(Ok)
        })
    }

    /// `calls` guest→host clock imports inside one host→guest call.
    pub fn probe(&mut self, calls: u32) -> Result<i64, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_probe(s, calls).map(Ok)
        })
    }

    /// The LLM steps' circuits and the items waiting (issue 42).
    pub fn llm_status(&mut self, namespace: Option<&str>) -> Result<LlmState, CallError> {
        self.call(Mode::Read, |a, s| {
            a.mnemo_core_engine().call_llm_status(s, namespace)
        })
    }

    /// Makes waiting and parked items due now; returns how many.
    pub fn retry_waiting(
        &mut self,
        namespace: Option<&str>,
        id: Option<&str>,
    ) -> Result<u32, CallError> {
        self.call(Mode::Write(Locks::of(namespace)), |a, s| {
            a.mnemo_core_engine().call_retry_waiting(s, namespace, id)
        })
    }
}
