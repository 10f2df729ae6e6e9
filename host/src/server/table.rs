//! Every route of the API, once, with its summary: [`api!`] turns the table
//! below into the router's routes, into [`ROUTES`] (paths and methods) and
//! into the operations `doc.rs` writes the OpenAPI document from, each
//! documented by its handler's own argument and answer types. A route is
//! documented because it is routed, and as its handler's types say.

use axum::Router;
use axum::extract::DefaultBodyLimit;

use super::AppState;
use super::doc::{Operation, build, document_of};
use super::routes::*;

/// `get(a)`, `get(a).post(b)`, ...: one path's method router.
macro_rules! methods {
    ($first:ident($h:expr) $(, $more:ident($mh:expr))*) => {
        axum::routing::$first($h)$(.$more($mh))*
    };
}

/// `"/path" => get(handler, "summary"), post(handler, "summary") [;
/// layer(L)]`: the routes, their list and their documentation.
macro_rules! api {
    ($( $path:literal => $($method:ident($handler:ident, $summary:literal)),+ $(; layer($layer:expr))? );* $(;)?) => {
        /// Every routed path with its methods (lower case), in table order.
        pub const ROUTES: &[(&str, &[&str])] = &[$( ($path, &[$(stringify!($method)),+]) ),*];

        /// The router of the table's routes.
        pub(super) fn routes() -> Router<AppState> {
            Router::new()$(.route($path, methods!($($method($handler)),+)$(.layer($layer))?))*
        }

        /// Every operation, for the document.
        pub(super) fn operations() -> Vec<Operation> {
            vec![$($(Operation {
                path: $path,
                method: stringify!($method),
                summary: $summary,
                document: |g| document_of(&$handler, g),
            }),+),*]
        }
    };
}

api! {
    "/health" => get(health, "Status, core version, counts, missing vectors");
    "/openapi.json" => get(openapi, "This document");
    "/stats" => get(stats, "Counts (`total` = active memories)");
    "/memories" => post(create_memory, "Remember (lands in Buffer; a duplicate reinforces the existing memory)"), get(list_memories, "List active memories, newest first");
    "/memories/{id}" => get(get_memory, "One memory"), patch(update_memory, "Update content, tags, importance, kind or attributes"), delete(delete_memory, "Soft delete (restorable)");
    "/memories/{id}/restore" => post(restore_memory, "Restore from the trash");
    "/memories/{id}/history" => get(memory_history, "The earlier states of a memory (edits, merges, reverts), oldest first, and the memory now");
    "/memories/{id}/confirm" => post(confirm_memory, "Protect a memory for good: no fading, no eviction (seed 003's confirm_fact)");
    "/memories/{id}/correct" => post(correct_memory, "Replace a memory with corrected text; the old one is superseded (seed 003's correct_fact)");
    "/memories/{id}/revert" => post(revert_memory, "Put an earlier version back; the state it replaces is kept as a version too");
    "/memories/batch" => post(create_batch, "Remember many in one transaction (one invalid item: none stored)");
    "/trash" => get(trash, "Soft-deleted memories");
    "/recall" => post(recall, "Hybrid recall with score explanations");
    "/episodes" => post(ingest, "Store a dialogue turn");
    "/sessions" => get(list_sessions, "The sessions seen so far, most recently active first");
    "/sessions/{id}" => get(get_session, "One session and its turns in dialogue order");
    "/sessions/{id}/consolidate" => post(consolidate_session, "Seed 003's session consolidation of this session, now (a session already consolidated is left alone)");
    "/llm-usage" => get(llm_usage, "LLM and embedding call ledger");
    "/llm/waiting" => get(llm_waiting, "The LLM steps' circuits and the items whose step failed: waiting out a backoff, or parked (`retry_at` null)");
    "/llm/retry" => post(llm_retry, "Make waiting and parked items due now (one `id`, or all); the next cycle tries them");
    "/decisions" => get(decisions, "The decision log: what the engine decided and why, newest first");
    "/review" => post(review, "Seed 004's LLM review of Working and Core, under the review rules");
    // The round 1 spelling of the two above.
    "/audit" => get(decisions, "The audit log of lifecycle decisions, newest first"), post(review, "Run seed 004's LLM audit of Working and Core through the sandbox (503 when the LLM level is off)");
    "/entities/{name}" => get(entity_info, "An entity's profile and linked memories and episodes");
    "/search" => get(quick_search, "Quick search: a dry recall with a small default limit");
    "/recent" => get(recent, "Memories modified in the last hours, newest first");
    "/resume" => get(resume, "Session-recovery context: Core, Recent, Topics, Triggers (seed 004)");
    "/topics" => get(list_topics, "The topic index: leaves (`kb…`) and their parents (`kp…`, seed 004 §6.3's hierarchy), each with `id`, `name`, `parent`, `children`");
    "/topic" => post(topic, "Topics by id with their memories (seed 004 POST /topic)");
    "/triggers" => get(triggers, "trigger:* tags by summed access count");
    "/triggers/{name}" => get(trigger_memories, "Memories tagged trigger:<name>");
    "/context" => post(context, "Context injection (seed 003): relevant facts from earlier sessions and the latest reflection, as markdown");
    "/consolidate" => post(consolidate, "One consolidation cycle; dry reports without writing");
    "/reflect" => post(reflect, "The weekly reflection (at most one in six days unless force)");
    "/fade" => post(fade, "Seed 003's confidence fading now, over the configured layers (the 04:00 task)");
    "/enrich" => post(enrich, "The accurate NER pass now (the 02:00 task), planned then applied");
    "/facts" => post(add_fact, "Add a (subject, predicate, object) triple; exclusive supersedes the subject's other objects"), get(query_facts, "Valid facts by subject, predicate, object or entity");
    "/facts/graph" => get(fact_graph, "Facts reachable from an entity within hops (at most 2)");
    "/facts/conflicts" => get(fact_conflicts, "Valid facts with the same subject and predicate and different objects");
    "/facts/history" => get(fact_history, "Every version of the matching facts, superseded ones included");
    "/export" => get(export, "Everything as JSON lines (memories incl. the trash, episodes, sessions, entities)");
    "/keys" => post(create_key, "Make an API key scoped to namespaces, with a role (read, write, admin); its secret is in this answer only"), get(list_keys, "Every API key (revoked ones too), without secrets");
    "/keys/{id}/rotate" => post(rotate_key, "A new secret for a key (same id, role and namespaces); the old one stops working");
    "/keys/{id}" => delete(revoke_key, "Revoke a key (it stays listed, with the time)");
    "/import" => post(import, "Import an export (ids, times, counts kept; duplicates folded; all or nothing)"); layer(DefaultBodyLimit::max(super::MAX_IMPORT_BYTES));
}

/// The OpenAPI document of the table, built once.
pub fn document() -> &'static serde_json::Value {
    static DOC: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| build(&operations()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The document lists exactly the routed paths and methods, each with
    /// its answer's schema, and every `$ref` resolves.
    #[test]
    fn the_document_lists_every_route_and_nothing_else() {
        let doc = super::document();
        let documented: BTreeSet<(String, String)> = doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .flat_map(|(path, ops)| {
                ops.as_object()
                    .into_iter()
                    .flatten()
                    .map(move |(method, _)| (path.clone(), method.clone()))
            })
            .collect();
        let routed: BTreeSet<(String, String)> = super::ROUTES
            .iter()
            .flat_map(|(path, methods)| methods.iter().map(|m| (path.to_string(), m.to_string())))
            .collect();
        assert_eq!(documented, routed);
        assert!(routed.len() >= 40, "{} operations", routed.len());
        let mut refs = Vec::new();
        collect_refs(doc, &mut refs);
        assert!(refs.len() > 40, "{} references", refs.len());
        for target in refs {
            let node = target
                .trim_start_matches("#/")
                .split('/')
                .fold(doc, |node, part| &node[part]);
            assert!(!node.is_null(), "{target} does not resolve");
        }
    }

    fn collect_refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v.as_str()) {
                        ("$ref", Some(target)) => out.push(target.to_string()),
                        _ => collect_refs(v, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }
}
