//! The engine export: each function crosses its arguments into the model,
//! calls the engine, and crosses the answer back.

use super::{WitPorts, engine as api, types};
use crate::Engine;
use crate::cross::Cross;

type Out<T> = Result<T, types::Error>;

/// The bounds of LLM work the host set (`configure-llm`), for every call
/// that follows on this instance.
static POLICY: std::sync::Mutex<Option<crate::model::LlmPolicy>> = std::sync::Mutex::new(None);

/// Who reads whose memories (`configure-sharing`), likewise.
static SHARING: std::sync::Mutex<Option<crate::model::Sharing>> = std::sync::Mutex::new(None);

fn engine() -> Engine<WitPorts> {
    let policy = POLICY.lock().ok().and_then(|p| p.clone());
    let sharing = SHARING.lock().ok().and_then(|s| s.clone());
    Engine::with_policy(WitPorts, policy.unwrap_or_default())
        .with_sharing(sharing.unwrap_or_default())
}

/// The engine's answer, crossed into the bindings' types.
fn out<T: Cross<U>, U>(r: crate::CoreResult<T>) -> Out<U> {
    r.map(Cross::cross).map_err(Cross::cross)
}

struct Component;

impl api::Guest for Component {
    fn remember(req: api::RememberRequest) -> Out<api::RememberOutcome> {
        out(engine().remember(req.cross()))
    }
    fn ingest(t: api::Turn) -> Out<api::IngestOutcome> {
        out(engine().ingest(t.cross()))
    }
    fn recall(req: api::RecallRequest) -> Out<api::RecallResponse> {
        out(engine().recall(req.cross()))
    }
    fn get(namespace: String, id: String) -> Out<types::Memory> {
        out(engine().get(&namespace, &id))
    }
    fn list(req: api::ListRequest) -> Out<Vec<types::Memory>> {
        out(engine().list(req.cross()))
    }
    fn update(namespace: String, id: String, patch: api::MemoryPatch) -> Out<types::Memory> {
        out(engine().update(&namespace, &id, patch.cross()))
    }
    fn delete(namespace: String, id: String, reason: String) -> Out<types::Memory> {
        out(engine().delete(&namespace, &id, &reason))
    }
    fn restore(namespace: String, id: String) -> Out<types::Memory> {
        out(engine().restore(&namespace, &id))
    }
    fn confirm(namespace: String, id: String) -> Out<types::Memory> {
        out(engine().confirm(&namespace, &id))
    }
    fn correct(namespace: String, id: String, content: String) -> Out<types::Memory> {
        out(engine().correct(&namespace, &id, &content))
    }
    fn history(namespace: String, id: String) -> Out<Vec<types::MemoryVersion>> {
        out(engine().history(&namespace, &id))
    }
    fn revert(namespace: String, id: String, seq: u32) -> Out<types::Memory> {
        out(engine().revert(&namespace, &id, seq))
    }
    fn stats(namespace: Option<String>) -> Out<types::StoreStats> {
        out(engine().stats(namespace.as_deref()))
    }
    fn entity_info(namespace: String, name: String, limit: u32) -> Out<Vec<api::EntityProfile>> {
        out(engine().entity_info(&namespace, &name, limit))
    }
    fn enrich(limit: u32) -> Out<api::EnrichReport> {
        out(engine().enrich(limit))
    }
    fn import(item: api::ImportItem) -> Out<api::ImportOutcome> {
        out(engine().import(item.cross()))
    }
    fn fade(req: api::FadeRequest) -> Out<api::FadeReport> {
        out(engine().fade(req.cross()))
    }
    fn consolidate(req: api::ConsolidateRequest) -> Out<api::ConsolidateReport> {
        out(engine().consolidate(req.cross()))
    }
    fn configure_llm(policy: api::LlmPolicy) {
        if let Ok(mut p) = POLICY.lock() {
            *p = Some(policy.cross());
        }
    }
    fn configure_sharing(sharing: api::Sharing) {
        if let Ok(mut s) = SHARING.lock() {
            *s = Some(sharing.cross());
        }
    }
    fn llm_status(namespace: Option<String>) -> Out<api::LlmState> {
        out(engine().llm_state(namespace.as_deref()))
    }
    fn retry_waiting(namespace: Option<String>, id: Option<String>) -> Out<u32> {
        out(engine().retry_waiting(namespace.as_deref(), id.as_deref()))
    }
    fn consolidate_sessions(namespace: String, ids: Vec<String>) -> Out<api::ConsolidateReport> {
        out(engine().consolidate_sessions(&namespace, &ids))
    }
    fn review(namespace: Option<String>, dry: bool) -> Out<api::ReviewReport> {
        out(engine().review(namespace.as_deref(), dry))
    }
    fn rebuild_topics(namespace: Option<String>) -> Out<u32> {
        out(engine().rebuild_topics(namespace.as_deref()))
    }
    fn plan_topics(namespace: String) -> Out<Option<api::TopicPlan>> {
        out(engine().plan_topics(&namespace))
    }
    fn apply_topics(plan: api::TopicPlan) -> Out<u32> {
        out(engine().apply_topics(plan.cross()))
    }
    fn topics(namespace: String, ids: Vec<String>) -> Out<Vec<api::Topic>> {
        out(engine().topics(&namespace, &ids))
    }
    fn resume(req: api::ResumeRequest) -> Out<api::ResumeBlock> {
        out(engine().resume(req.cross()))
    }
    fn context(
        namespace: String,
        prompt: String,
        session_id: Option<String>,
        limit: u32,
    ) -> Out<api::ContextBlock> {
        out(engine().context(&namespace, &prompt, session_id.as_deref(), limit))
    }
    fn reflect(namespace: String, force: bool) -> Out<api::ReflectOutcome> {
        out(engine().reflect(&namespace, force))
    }
    fn recent(namespace: String, hours: u32, limit: u32) -> Out<Vec<types::Memory>> {
        out(engine().recent(&namespace, hours, limit))
    }
    fn triggers(namespace: String) -> Out<Vec<(String, u64)>> {
        out(engine().triggers(&namespace))
    }
    fn add_fact(f: api::FactInput) -> Out<api::FactOutcome> {
        out(engine().add_fact(f.cross()))
    }
    fn query_facts(q: types::FactQuery) -> Out<Vec<types::Fact>> {
        out(engine().query_facts(q.cross()))
    }
    fn fact_graph(namespace: String, entity: String, hops: u32) -> Out<Vec<types::Fact>> {
        out(engine().fact_graph(&namespace, &entity, hops))
    }
    fn fact_conflicts(namespace: String) -> Out<Vec<(types::Fact, types::Fact)>> {
        out(engine().fact_conflicts(&namespace))
    }
    fn version() -> String {
        env!("CARGO_PKG_VERSION").to_string()
    }
    fn probe(calls: u32) -> i64 {
        (0..calls).fold(0, |_, _| super::clock::now())
    }
}

impl super::exports::mnemo::core::analysis::Guest for Component {
    fn tokens(text: String, content_only: bool) -> Vec<String> {
        let tokens = crate::text::tokens(&text);
        if !content_only {
            return tokens;
        }
        tokens
            .into_iter()
            .filter(|t| !crate::text::is_stop_word(t))
            .collect()
    }
    fn index_text(text: String) -> String {
        crate::text::index_text(&text)
    }
    fn hash_embedding(text: String, dimension: u32) -> Vec<f32> {
        crate::hash_embedding(&text, dimension as usize)
    }
    fn vector_parts(target: types::Target, text: String) -> Vec<String> {
        crate::vector_parts(target.cross(), &text)
    }
    fn combine_parts(vectors: Vec<Vec<f32>>) -> Vec<f32> {
        crate::combine_parts(&vectors)
    }
    fn merge_mentions(mentions: Vec<types::Mention>) -> Vec<types::Mention> {
        crate::merge_mentions(mentions.into_iter().map(Cross::cross).collect())
            .into_iter()
            .map(Cross::cross)
            .collect()
    }
}

super::export!(Component with_types_in super);
