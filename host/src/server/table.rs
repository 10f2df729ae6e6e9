//! Every route of the API, once: [`api!`] turns the table below into the
//! router's routes and into [`ROUTES`], the list of paths and methods that
//! the test at the bottom holds `openapi.json` to — a route cannot be added
//! without being documented, nor documented without being routed.

use axum::Router;
use axum::extract::DefaultBodyLimit;

use super::AppState;
use super::routes::*;

/// `get(a)`, `get(a).post(b)`, ...: one path's method router.
macro_rules! methods {
    ($first:ident($h:expr) $(, $more:ident($mh:expr))*) => {
        axum::routing::$first($h)$(.$more($mh))*
    };
}

/// `"/path" => get(handler), post(handler) [; layer(L)]`: the routes and
/// their list.
macro_rules! api {
    ($( $path:literal => $($method:ident($handler:expr)),+ $(; layer($layer:expr))? );* $(;)?) => {
        /// Every routed path with its methods (lower case), in table order.
        pub const ROUTES: &[(&str, &[&str])] = &[$( ($path, &[$(stringify!($method)),+]) ),*];

        /// The router of the table's routes.
        pub(super) fn routes() -> Router<AppState> {
            Router::new()$(.route($path, methods!($($method($handler)),+)$(.layer($layer))?))*
        }
    };
}

api! {
    "/health" => get(health);
    "/openapi.json" => get(openapi);
    "/stats" => get(stats);
    "/memories" => post(create_memory), get(list_memories);
    "/memories/{id}" => get(get_memory), patch(update_memory), delete(delete_memory);
    "/memories/{id}/restore" => post(restore_memory);
    "/memories/{id}/history" => get(memory_history);
    "/memories/{id}/confirm" => post(confirm_memory);
    "/memories/{id}/correct" => post(correct_memory);
    "/memories/{id}/revert" => post(revert_memory);
    "/memories/batch" => post(create_batch);
    "/trash" => get(trash);
    "/recall" => post(recall);
    "/episodes" => post(ingest);
    "/sessions" => get(list_sessions);
    "/sessions/{id}" => get(get_session);
    "/sessions/{id}/consolidate" => post(consolidate_session);
    "/llm-usage" => get(llm_usage);
    "/decisions" => get(decisions);
    "/review" => post(review);
    // The round 1 spelling of the two above.
    "/audit" => get(decisions), post(review);
    "/entities/{name}" => get(entity_info);
    "/search" => get(quick_search);
    "/recent" => get(recent);
    "/resume" => get(resume);
    "/topics" => get(list_topics);
    "/topic" => post(topic);
    "/triggers" => get(triggers);
    "/triggers/{name}" => get(trigger_memories);
    "/context" => post(context);
    "/consolidate" => post(consolidate);
    "/reflect" => post(reflect);
    "/fade" => post(fade);
    "/enrich" => post(enrich);
    "/facts" => post(add_fact), get(query_facts);
    "/facts/graph" => get(fact_graph);
    "/facts/conflicts" => get(fact_conflicts);
    "/facts/history" => get(fact_history);
    "/export" => get(export);
    "/import" => post(import); layer(DefaultBodyLimit::max(super::MAX_IMPORT_BYTES));
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// `openapi.json` documents exactly the routed paths and methods.
    #[test]
    fn the_document_lists_every_route_and_nothing_else() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("openapi.json")).unwrap_or_default();
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
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty(),
            "routed but not documented: {undocumented:?}"
        );
        assert!(
            unrouted.is_empty(),
            "documented but not routed: {unrouted:?}"
        );
        assert!(routed.len() >= 40, "{} operations", routed.len());
    }
}
