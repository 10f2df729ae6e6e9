//! SQL building blocks for the Postgres store: numbered parameters, the
//! WHERE fragment of a `SearchFilter` (values always bound, never spliced),
//! and row ↔ model mapping.

use mnemo_core::CoreError;
use mnemo_core::model::*;
use postgres::Row;
use postgres::types::ToSql;

use super::R;

/// Parameters of one statement; [`Args::add`] returns the placeholder.
#[derive(Default)]
pub struct Args {
    values: Vec<Box<dyn ToSql + Sync>>,
}

impl Args {
    pub fn add<T: ToSql + Sync + 'static>(&mut self, v: T) -> String {
        self.values.push(Box::new(v));
        format!("${}", self.values.len())
    }

    pub fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values.iter().map(|v| v.as_ref() as _).collect()
    }
}

pub fn table(target: Target) -> &'static str {
    match target {
        Target::Memories => "memories",
        Target::Episodes => "episodes",
    }
}

/// The entity link table of a target and its item column.
pub fn junction(target: Target) -> (&'static str, &'static str) {
    match target {
        Target::Memories => ("memory_entities", "memory_id"),
        Target::Episodes => ("episode_entities", "episode_id"),
    }
}

/// Conditions on rows of `alias` in `state` that `f` demands (the SQLite
/// store's `filter.rs`, clause for clause). Layer, kind, tag and source
/// conditions only exist for memories.
pub fn where_clause(
    target: Target,
    alias: &str,
    f: &SearchFilter,
    state: ListState,
    args: &mut Args,
) -> String {
    let mut parts = vec![match state {
        ListState::Active => format!("{alias}.valid_until IS NULL"),
        ListState::Deleted => format!("{alias}.valid_until IS NOT NULL"),
        ListState::All => "TRUE".to_string(),
    }];
    if !f.namespaces.is_empty() {
        parts.push(one_of(
            &format!("{alias}.namespace"),
            f.namespaces.clone(),
            args,
        ));
    }
    if let Some(s) = f.since {
        let p = args.add(s);
        parts.push(format!("{alias}.event_time >= {p}"));
    }
    if let Some(u) = f.until {
        let p = args.add(u);
        parts.push(format!("{alias}.event_time <= {p}"));
    }
    if let Some(s) = &f.session_id {
        let p = args.add(s.clone());
        parts.push(format!("{alias}.session_id = {p}"));
    }
    if let Some(s) = &f.exclude_session {
        let p = args.add(s.clone());
        parts.push(format!(
            "({alias}.session_id IS NULL OR {alias}.session_id != {p})"
        ));
    }
    if target == Target::Memories {
        if !f.layers.is_empty() {
            let layers: Vec<String> = f.layers.iter().map(|l| l.as_str().to_string()).collect();
            parts.push(one_of(&format!("{alias}.layer"), layers, args));
        }
        if !f.kinds.is_empty() {
            let kinds: Vec<String> = f.kinds.iter().map(|k| k.as_str().to_string()).collect();
            parts.push(one_of(&format!("{alias}.kind"), kinds, args));
        }
        if !f.tags.is_empty() {
            // Every tag: the list contains them all.
            let p = args.add(json_list(&f.tags));
            parts.push(format!("{alias}.tags @> {p}::text::jsonb"));
        }
        if let Some(s) = &f.source {
            let p = args.add(s.clone());
            parts.push(format!("{alias}.source = {p}"));
        }
    }
    parts.join(" AND ")
}

/// `column` is one of `values`: `= $n` for one value — the planner then
/// walks an index in its order (a cycle's "Working, newest change first"),
/// which it does not for `= ANY(array)` in a prepared statement — else
/// `= ANY($n)`.
pub fn one_of(column: &str, mut values: Vec<String>, args: &mut Args) -> String {
    if values.len() == 1
        && let Some(v) = values.pop()
    {
        return format!("{column} = {}", args.add(v));
    }
    format!("{column} = ANY({})", args.add(values))
}

pub fn json_list(v: &[String]) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

fn bad(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::Storage(format!("{what}: {e}"))
}

fn get<'a, T: postgres::types::FromSql<'a>>(r: &'a Row, i: usize) -> R<T> {
    r.try_get(i).map_err(|e| bad("reading a row", e))
}

fn count(r: &Row, i: usize) -> R<u32> {
    let n: i64 = get(r, i)?;
    u32::try_from(n.max(0)).map_err(|e| bad("a count", e))
}

fn parse<T: std::str::FromStr>(r: &Row, i: usize) -> R<T> {
    let s: String = get(r, i)?;
    s.parse()
        .map_err(|_| CoreError::Storage(format!("bad value `{s}`")))
}

fn list(r: &Row, i: usize) -> R<Vec<String>> {
    let s: String = get(r, i)?;
    serde_json::from_str(&s).map_err(|e| bad("a JSON list", e))
}

pub const MEMORY_COLUMNS: &str = "id, namespace, content, kind, layer, importance, confidence, decay_rate, \
     access_count, repetition_count, created_at, modified_at, last_accessed, event_time, created_epoch, \
     valid_until, invalid_reason, session_id, source, source_role, tags::text, attributes, source_ids, \
     supersedes, superseded_by";

pub fn memory(r: &Row) -> R<Memory> {
    Ok(Memory {
        id: get(r, 0)?,
        namespace: get(r, 1)?,
        content: get(r, 2)?,
        kind: parse(r, 3)?,
        layer: parse(r, 4)?,
        importance: get(r, 5)?,
        confidence: get(r, 6)?,
        decay_rate: get(r, 7)?,
        access_count: count(r, 8)?,
        repetition_count: count(r, 9)?,
        created_at: get(r, 10)?,
        modified_at: get(r, 11)?,
        last_accessed: get(r, 12)?,
        event_time: get(r, 13)?,
        created_epoch: get::<i64>(r, 14)?.max(0) as u64,
        valid_until: get(r, 15)?,
        invalid_reason: get(r, 16)?,
        session_id: get(r, 17)?,
        source: get(r, 18)?,
        source_role: get(r, 19)?,
        tags: list(r, 20)?,
        attributes: get(r, 21)?,
        source_ids: list(r, 22)?,
        supersedes: get(r, 23)?,
        superseded_by: get(r, 24)?,
    })
}

pub const EPISODE_COLUMNS: &str = "id, namespace, session_id, source_role, content, event_time, created_at, valid_until, invalid_reason, attributes";

pub fn episode(r: &Row) -> R<Episode> {
    Ok(Episode {
        id: get(r, 0)?,
        namespace: get(r, 1)?,
        session_id: get(r, 2)?,
        source_role: get(r, 3)?,
        content: get(r, 4)?,
        event_time: get(r, 5)?,
        created_at: get(r, 6)?,
        valid_until: get(r, 7)?,
        invalid_reason: get(r, 8)?,
        attributes: get(r, 9)?,
    })
}

pub const SESSION_COLUMNS: &str =
    "namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at, consolidated_turns";

pub fn session(r: &Row) -> R<Session> {
    Ok(Session {
        namespace: get(r, 0)?,
        id: get(r, 1)?,
        first_seen_at: get(r, 2)?,
        last_seen_at: get(r, 3)?,
        turn_count: count(r, 4)?,
        consolidated_at: get(r, 5)?,
        consolidated_turns: count(r, 6)?,
    })
}

pub const FACT_COLUMNS: &str = "id, namespace, subject, predicate, object, confidence, valid_from, valid_until, \
     superseded_by, memory_id";

pub fn fact(r: &Row) -> R<Fact> {
    Ok(Fact {
        id: get(r, 0)?,
        namespace: get(r, 1)?,
        subject: get(r, 2)?,
        predicate: get(r, 3)?,
        object: get(r, 4)?,
        confidence: get(r, 5)?,
        valid_from: get(r, 6)?,
        valid_until: get(r, 7)?,
        superseded_by: get(r, 8)?,
        memory_id: get(r, 9)?,
    })
}

pub const ENTITY_COLUMNS: &str =
    "id, namespace, canonical_name, entity_type, aliases, mention_count, summary";

pub fn entity(r: &Row) -> R<Entity> {
    Ok(Entity {
        id: get(r, 0)?,
        namespace: get(r, 1)?,
        canonical_name: get(r, 2)?,
        entity_type: parse(r, 3)?,
        aliases: list(r, 4)?,
        mention_count: count(r, 5)?,
        summary: get(r, 6)?,
    })
}

pub fn rows<T>(rows: Vec<Row>, f: impl Fn(&Row) -> R<T>) -> R<Vec<T>> {
    rows.iter().map(f).collect()
}
