//! SQL for a `SearchFilter`: a WHERE fragment over an alias plus its
//! parameters. Values are always bound, never spliced.

use mnemo_core::model::{ListState, SearchFilter, Target};
use rusqlite::types::Value;

pub struct Sql {
    pub clause: String,
    pub params: Vec<Value>,
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(",")
}

/// Conditions on active rows of `alias` (a `memories` or `episodes` row)
/// that `f` demands. Layer, kind, tag and source conditions only exist for
/// memories.
pub fn where_clause(target: Target, alias: &str, f: &SearchFilter) -> Sql {
    where_clause_in(target, alias, f, ListState::Active)
}

/// The same, over active rows, soft-deleted rows, or both.
pub fn where_clause_in(target: Target, alias: &str, f: &SearchFilter, state: ListState) -> Sql {
    let mut parts = vec![match state {
        ListState::Active => format!("{alias}.valid_until IS NULL"),
        ListState::Deleted => format!("{alias}.valid_until IS NOT NULL"),
        ListState::All => "1".to_string(),
    }];
    let mut params: Vec<Value> = Vec::new();
    if !f.namespaces.is_empty() {
        parts.push(format!(
            "{alias}.namespace IN ({})",
            placeholders(f.namespaces.len())
        ));
        params.extend(f.namespaces.iter().cloned().map(Value::Text));
    }
    if let Some(s) = f.since {
        parts.push(format!("{alias}.event_time >= ?"));
        params.push(Value::Integer(s));
    }
    if let Some(u) = f.until {
        parts.push(format!("{alias}.event_time <= ?"));
        params.push(Value::Integer(u));
    }
    if let Some(s) = &f.session_id {
        parts.push(format!("{alias}.session_id = ?"));
        params.push(Value::Text(s.clone()));
    }
    if let Some(s) = &f.exclude_session {
        parts.push(format!(
            "({alias}.session_id IS NULL OR {alias}.session_id != ?)"
        ));
        params.push(Value::Text(s.clone()));
    }
    if target == Target::Memories {
        if !f.layers.is_empty() {
            parts.push(format!(
                "{alias}.layer IN ({})",
                placeholders(f.layers.len())
            ));
            params.extend(f.layers.iter().map(|l| Value::Text(l.as_str().into())));
        }
        if !f.kinds.is_empty() {
            parts.push(format!("{alias}.kind IN ({})", placeholders(f.kinds.len())));
            params.extend(f.kinds.iter().map(|k| Value::Text(k.as_str().into())));
        }
        for tag in &f.tags {
            parts.push(format!(
                "EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE value = ?)"
            ));
            params.push(Value::Text(tag.clone()));
        }
        if let Some(s) = &f.source {
            parts.push(format!("{alias}.source = ?"));
            params.push(Value::Text(s.clone()));
        }
    }
    Sql {
        clause: parts.join(" AND "),
        params,
    }
}

pub fn in_list(n: usize) -> String {
    placeholders(n)
}

pub fn table(target: Target) -> &'static str {
    match target {
        Target::Memories => "memories",
        Target::Episodes => "episodes",
    }
}
