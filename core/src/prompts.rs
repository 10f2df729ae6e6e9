//! Every lifecycle LLM prompt, its tool schema and its parser, in one place
//! (seed 004 keeps them in `prompts.rs` too). Each step is one forced tool
//! call through the `llm` port; a malformed answer is a typed `llm` error,
//! never a silent decision.

use serde_json::{Value, json};

use crate::error::{CoreError, CoreResult};
use crate::model::{ChatMessage, ChatRequest, Kind, Memory, ToolSpec};

pub const GATE_SYSTEM: &str = "You guard the Core layer of an AI agent's long-term memory. \
Core holds only what stays true and matters in every future session. Approve a memory ONLY if it \
is one of: LESSON (a hard-won insight from a mistake or experience), IDENTITY (who the user or agent \
is, their lasting preferences and constraints), CONSTRAINT (an unconditional rule; anything said to \
be 'for now' or temporary is rejected), DECISION RATIONALE (why a permanent design or architecture \
choice was made). Everything else is rejected: status updates, plans, one-off events, facts that \
will change. When in doubt, reject.";

pub const TRIAGE_SYSTEM: &str = "You triage the intake buffer of an AI agent's long-term memory. \
For each memory decide `promote` (durable knowledge worth keeping active: preferences, facts about \
people and projects, lessons, procedures, decisions) or `keep` (chit-chat, transient status, \
duplicates, things that only mattered in the moment; they stay in the buffer and fade). Mark \
workflows and how-tos as kind `procedural`.";

pub const EXTRACT_SYSTEM: &str = "You distil a dialogue into durable facts for long-term memory. \
Return facts worth remembering across sessions: who people are, what they like, do, own, plan and \
decided, and events with their dates. One self-contained sentence per fact, naming people instead \
of pronouns and giving absolute dates when the dialogue gives them. Where a fact is a clear \
relation, also give it as subject / predicate / object. Skip greetings, small talk and anything \
not stated in the dialogue. `turns` lists the numbers of the turns a fact comes from.";

pub const REFLECTION_SYSTEM: &str = "You write the weekly reflection of an AI agent's long-term \
memory: from the facts and dialogue of the past week, state in at most 120 words the patterns, \
recurring themes, changes and open threads worth carrying into next week. Do not repeat the facts \
one by one and do not invent anything.";

pub const MERGE_SYSTEM: &str = "You merge two near-duplicate entries of an AI agent's long-term \
memory into one. Keep every specific detail of both (names, numbers, dates, constraints, \
reinforcement such as 'always' or 'never'); drop only the repetition. If the two entries say \
different things that must not be combined, answer distinct = true.";

pub const RECONCILE_PROMPT: &str = "Two entries of an AI agent's long-term memory are about the same \
topic; the second is newer. Decide: `update` if the newer one makes the older stale (a changed \
value, a reversed decision), `absorb` if they overlap and belong in one entry, `keep_both` if they \
cover different aspects. For update and absorb, give merged_content: one entry that keeps every \
still-true specific detail of both, the newer wording winning where they disagree.";

pub const DISTILL_SYSTEM: &str = "Summarise these session notes of an AI agent into one project \
status snapshot of at most 250 characters: where things stand, what is next. Only what the notes \
say.";

pub const AUDIT_SYSTEM: &str = "You audit the Working and Core layers of an AI agent's long-term \
memory. You have three powers and no other: schedule (promote a memory one layer up, or demote \
it one layer down: Core to Working, Working to Buffer), adjust (set importance between 0 and 1), \
merge (combine two or more overlapping memories into one text that keeps every detail). You \
cannot delete. Propose only operations that clearly improve the memory: Core is for lasting \
lessons, identity, constraints and decision rationale; stale or minor items do not belong there. \
Refer to memories by their [id]. Propose nothing if all is well.";

pub const EXPAND_PROMPT: &str = "You help search an AI agent's long-term memory. Rewrite the query \
as 4 to 6 alternative search phrases: synonyms, the likely wording of a stored fact that answers \
it, related names. Give phrases in both English and Chinese when either language could have been \
used to store the answer. Phrases only, no explanations.";

pub const RERANK_SYSTEM: &str = "You rank memories by how well they answer a query. Return the \
candidate numbers, most relevant first; leave out none.";

pub const TOPIC_NAMING_SYSTEM: &str = "You name topic clusters of an AI agent's memory. For each \
cluster give a short, specific name of 2 to 5 words that covers its samples. Names must differ from \
each other and from the existing names given.";

fn request(component: &str, system: &str, user: String, tool: ToolSpec, max: u32) -> ChatRequest {
    ChatRequest {
        component: component.into(),
        messages: vec![
            ChatMessage {
                role: "system".into(),
                content: system.into(),
            },
            ChatMessage {
                role: "user".into(),
                content: user,
            },
        ],
        json: true,
        max_tokens: Some(max),
        tool: Some(tool),
    }
}

fn tool(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: parameters.to_string(),
    }
}

fn parse_json(step: &str, arguments: &str) -> CoreResult<Value> {
    serde_json::from_str(arguments)
        .map_err(|e| CoreError::Llm(format!("malformed {step} answer: {e}")))
}

fn list<'a>(step: &str, v: &'a Value, key: &str) -> CoreResult<&'a Vec<Value>> {
    v[key]
        .as_array()
        .ok_or_else(|| CoreError::Llm(format!("malformed {step} answer: no `{key}` list")))
}

/// The 8-character handle a memory goes by in a prompt.
pub fn short_id(id: &str) -> &str {
    let tail = id.rsplit('_').next().unwrap_or(id);
    &tail[tail.len().saturating_sub(8)..]
}

fn describe(m: &Memory, now: i64) -> String {
    let days = (now - m.created_at).max(0) / 86_400_000;
    format!(
        "[{}] imp={:.2} access={} rep={} age={}d kind={} tags=[{}] {}",
        short_id(&m.id),
        m.importance,
        m.access_count,
        m.repetition_count,
        days,
        m.kind.as_str(),
        m.tags.join(","),
        m.content
    )
}

fn resolve<'a>(handle: &str, memories: &'a [Memory]) -> Option<&'a Memory> {
    memories
        .iter()
        .find(|m| short_id(&m.id) == handle || m.id == handle)
}

// ---- gate -------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub id: String,
    pub promote: bool,
    pub kind: Option<Kind>,
    pub reason: String,
}

pub fn gate_request(candidates: &[Memory], now: i64) -> ChatRequest {
    let lines: Vec<String> = candidates
        .iter()
        .map(|m| {
            let mut line = describe(m, now);
            if m.access_count >= crate::thresholds::GATE_HIGH_ACCESS
                || m.repetition_count >= crate::thresholds::GATE_HIGH_REPETITION
            {
                line.push_str("  (recalled or restated often)");
            }
            line
        })
        .collect();
    request(
        "gate",
        GATE_SYSTEM,
        format!("Candidates for Core:\n{}", lines.join("\n")),
        tool(
            "gate_decisions",
            "Approve or reject each candidate.",
            json!({
                "type": "object",
                "properties": { "decisions": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "decision": { "type": "string", "enum": ["approve", "reject"] },
                        "kind": { "type": "string", "enum": ["semantic", "procedural", "episodic"] },
                        "reason": { "type": "string" }
                    },
                    "required": ["id", "decision"]
                }}},
                "required": ["decisions"]
            }),
        ),
        1024,
    )
}

/// Verdicts for the candidates the answer names; unknown ids are dropped.
pub fn parse_gate(arguments: &str, candidates: &[Memory]) -> CoreResult<Vec<Verdict>> {
    parse_verdicts("gate", arguments, candidates, "approve")
}

fn parse_verdicts(
    step: &str,
    arguments: &str,
    memories: &[Memory],
    yes: &str,
) -> CoreResult<Vec<Verdict>> {
    let v = parse_json(step, arguments)?;
    let mut out = Vec::new();
    for d in list(step, &v, "decisions")? {
        let Some(m) = d["id"].as_str().and_then(|h| resolve(h, memories)) else {
            continue;
        };
        out.push(Verdict {
            id: m.id.clone(),
            promote: d["decision"].as_str() == Some(yes),
            kind: d["kind"].as_str().and_then(|k| k.parse().ok()),
            reason: d["reason"].as_str().unwrap_or_default().to_string(),
        });
    }
    Ok(out)
}

/// Seed 004's whitelist, without an LLM: procedures, and memories tagged or
/// phrased as a lesson, identity, constraint or decision.
pub fn gate_heuristic(m: &Memory) -> Option<&'static str> {
    const TAGS: [&str; 6] = [
        "lesson",
        "identity",
        "constraint",
        "decision",
        "preference",
        "rule",
    ];
    const TEMPORARY: [&str; 4] = ["for now", "temporarily", "temporary", "until further"];
    let lower = m.content.to_lowercase();
    if TEMPORARY.iter().any(|t| lower.contains(t)) {
        return None;
    }
    if m.kind == Kind::Procedural {
        return Some("procedure");
    }
    if let Some(t) = m.tags.iter().find(|t| TAGS.contains(&t.as_str())) {
        return Some(match t.as_str() {
            "lesson" => "lesson",
            "identity" | "preference" => "identity",
            "decision" => "decision rationale",
            _ => "constraint",
        });
    }
    const CUES: [(&str, &str); 9] = [
        ("always ", "constraint"),
        ("never ", "constraint"),
        ("must ", "constraint"),
        ("lesson", "lesson"),
        ("learned that", "lesson"),
        ("my name is", "identity"),
        ("i prefer", "identity"),
        ("prefers ", "identity"),
        ("because ", "decision rationale"),
    ];
    CUES.iter()
        .find(|(c, _)| lower.contains(c))
        .map(|(_, k)| *k)
}

// ---- triage -----------------------------------------------------------------

pub fn triage_request(memories: &[Memory], now: i64) -> ChatRequest {
    let lines: Vec<String> = memories.iter().map(|m| describe(m, now)).collect();
    request(
        "triage",
        TRIAGE_SYSTEM,
        format!("Buffer memories:\n{}", lines.join("\n")),
        tool(
            "triage_decisions",
            "Promote or keep each buffer memory.",
            json!({
                "type": "object",
                "properties": { "decisions": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": { "type": "string" },
                        "decision": { "type": "string", "enum": ["promote", "keep"] },
                        "kind": { "type": "string", "enum": ["semantic", "procedural", "episodic"] },
                        "reason": { "type": "string" }
                    },
                    "required": ["id", "decision"]
                }}},
                "required": ["decisions"]
            }),
        ),
        1024,
    )
}

pub fn parse_triage(arguments: &str, memories: &[Memory]) -> CoreResult<Vec<Verdict>> {
    parse_verdicts("triage", arguments, memories, "promote")
}

// ---- fact extraction ----------------------------------------------------------

/// One fact distilled from dialogue.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedFact {
    pub content: String,
    pub kind: Kind,
    pub importance: Option<f32>,
    pub triple: Option<(String, String, String)>,
    /// Whether the predicate holds a single value (a new object replaces the old).
    pub exclusive: bool,
    /// Indexes into the chunk's turns.
    pub turns: Vec<usize>,
}

/// `turns` are (speaker, text) in dialogue order.
pub fn extract_request(turns: &[(String, String)]) -> ChatRequest {
    let lines: Vec<String> = turns
        .iter()
        .enumerate()
        .map(|(i, (who, text))| format!("{i}. {who}: {text}"))
        .collect();
    request(
        "extract",
        EXTRACT_SYSTEM,
        format!("Dialogue:\n{}", lines.join("\n")),
        tool(
            "save_facts",
            "Save the durable facts of the dialogue.",
            json!({
                "type": "object",
                "properties": { "facts": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "content": { "type": "string" },
                        "kind": { "type": "string", "enum": ["semantic", "procedural", "episodic"] },
                        "importance": { "type": "number" },
                        "subject": { "type": "string" },
                        "predicate": { "type": "string" },
                        "object": { "type": "string" },
                        "single_valued": { "type": "boolean" },
                        "turns": { "type": "array", "items": { "type": "integer" } }
                    },
                    "required": ["content"]
                }}},
                "required": ["facts"]
            }),
        ),
        2048,
    )
}

pub fn parse_extract(arguments: &str, turns: usize) -> CoreResult<Vec<ExtractedFact>> {
    let v = parse_json("extract", arguments)?;
    let mut out = Vec::new();
    for f in list("extract", &v, "facts")? {
        let Some(content) = f["content"]
            .as_str()
            .map(str::trim)
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        let part = |k: &str| {
            f[k].as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let triple = match (part("subject"), part("predicate"), part("object")) {
            (Some(s), Some(p), Some(o)) => Some((s, p, o)),
            _ => None,
        };
        out.push(ExtractedFact {
            content: content.to_string(),
            kind: f["kind"]
                .as_str()
                .and_then(|k| k.parse().ok())
                .unwrap_or(Kind::Semantic),
            importance: f["importance"].as_f64().map(|x| (x as f32).clamp(0.0, 1.0)),
            triple,
            exclusive: f["single_valued"].as_bool().unwrap_or(false),
            turns: f["turns"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_u64)
                        .map(|i| i as usize)
                        .filter(|i| *i < turns)
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    Ok(out)
}

// ---- reflection ---------------------------------------------------------------

pub fn reflection_request(facts: &[Memory], dialogue: &[String]) -> ChatRequest {
    let mut user = String::from("Facts of the week:\n");
    for f in facts {
        user.push_str("- ");
        user.push_str(&f.content);
        user.push('\n');
    }
    if !dialogue.is_empty() {
        user.push_str("\nSome of the week's dialogue:\n");
        for d in dialogue {
            user.push_str("- ");
            user.push_str(d);
            user.push('\n');
        }
    }
    request(
        "reflection",
        REFLECTION_SYSTEM,
        user,
        tool(
            "save_reflection",
            "Save the weekly reflection.",
            json!({
                "type": "object",
                "properties": { "reflection": { "type": "string" } },
                "required": ["reflection"]
            }),
        ),
        512,
    )
}

pub fn parse_reflection(arguments: &str) -> CoreResult<String> {
    let v = parse_json("reflection", arguments)?;
    v["reflection"]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .ok_or_else(|| CoreError::Llm("malformed reflection answer: no `reflection`".into()))
}

// ---- merge, reconcile, distill --------------------------------------------------

/// What the LLM decided about a pair.
#[derive(Debug, Clone, PartialEq)]
pub enum PairDecision {
    /// Combine into one entry with this content.
    Merge(String),
    /// The older entry is stale: the newer takes this content.
    Update(String),
    /// Different things: leave both.
    KeepBoth,
}

pub fn merge_request(a: &Memory, b: &Memory) -> ChatRequest {
    request(
        "merge",
        MERGE_SYSTEM,
        format!("Entry A: {}\nEntry B: {}", a.content, b.content),
        tool(
            "merge_entries",
            "Merge the two entries, or say they are distinct.",
            json!({
                "type": "object",
                "properties": {
                    "merged": { "type": "string" },
                    "distinct": { "type": "boolean" }
                },
                "required": ["merged"]
            }),
        ),
        1024,
    )
}

pub fn parse_merge(arguments: &str) -> CoreResult<PairDecision> {
    let v = parse_json("merge", arguments)?;
    if v["distinct"].as_bool() == Some(true) {
        return Ok(PairDecision::KeepBoth);
    }
    merged_content("merge", &v, "merged").map(PairDecision::Merge)
}

fn merged_content(step: &str, v: &Value, key: &str) -> CoreResult<String> {
    v[key]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .ok_or_else(|| CoreError::Llm(format!("malformed {step} answer: no `{key}`")))
}

pub fn reconcile_request(older: &Memory, newer: &Memory) -> ChatRequest {
    request(
        "reconcile",
        RECONCILE_PROMPT,
        format!(
            "Older ({} days old): {}\nNewer: {}",
            (newer.created_at - older.created_at).max(0) / 86_400_000,
            older.content,
            newer.content
        ),
        tool(
            "reconcile_entries",
            "Decide how the two entries relate.",
            json!({
                "type": "object",
                "properties": {
                    "decision": { "type": "string", "enum": ["update", "absorb", "keep_both"] },
                    "merged_content": { "type": "string" }
                },
                "required": ["decision"]
            }),
        ),
        1024,
    )
}

/// `update` and `absorb` fall back to the newer content when the merged one
/// is empty (seed 004 §3.2).
pub fn parse_reconcile(arguments: &str, newer: &Memory) -> CoreResult<PairDecision> {
    let v = parse_json("reconcile", arguments)?;
    let content =
        merged_content("reconcile", &v, "merged_content").unwrap_or(newer.content.clone());
    match v["decision"].as_str() {
        Some("update") => Ok(PairDecision::Update(content)),
        Some("absorb") => Ok(PairDecision::Merge(content)),
        Some("keep_both") => Ok(PairDecision::KeepBoth),
        other => Err(CoreError::Llm(format!(
            "malformed reconcile answer: decision {other:?}"
        ))),
    }
}

pub fn distill_request(notes: &[Memory]) -> ChatRequest {
    let lines: Vec<String> = notes.iter().map(|n| format!("- {}", n.content)).collect();
    request(
        "distill",
        DISTILL_SYSTEM,
        lines.join("\n"),
        tool(
            "save_snapshot",
            "Save the project status snapshot.",
            json!({
                "type": "object",
                "properties": { "snapshot": { "type": "string" } },
                "required": ["snapshot"]
            }),
        ),
        256,
    )
}

pub fn parse_distill(arguments: &str) -> CoreResult<String> {
    let v = parse_json("distill", arguments)?;
    merged_content("distill", &v, "snapshot").map(|s| s.chars().take(250).collect())
}

// ---- audit -------------------------------------------------------------------

/// `hints` are pairs of memories that may overlap (merge candidates).
pub fn audit_request(memories: &[Memory], hints: &[(String, String)], now: i64) -> ChatRequest {
    let mut user = String::from("Memories:\n");
    for m in memories {
        let modified = (now - m.modified_at).max(0) / 86_400_000;
        user.push_str(&format!(
            "[{}] L{} mod={}d {}\n",
            short_id(&m.id),
            match m.layer {
                crate::model::Layer::Buffer => 1,
                crate::model::Layer::Working => 2,
                crate::model::Layer::Core => 3,
            },
            modified,
            describe(m, now)
        ));
    }
    if !hints.is_empty() {
        user.push_str("\nPossibly overlapping:\n");
        for (a, b) in hints {
            user.push_str(&format!("[{}] ~ [{}]\n", short_id(a), short_id(b)));
        }
    }
    request(
        "audit",
        AUDIT_SYSTEM,
        user,
        tool(
            "audit_operations",
            "Propose audit operations.",
            json!({
                "type": "object",
                "properties": { "operations": { "type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "op": { "type": "string", "enum": ["promote", "demote", "adjust", "merge"] },
                        "ids": { "type": "array", "items": { "type": "string" } },
                        "layer": { "type": "string", "enum": ["buffer", "working", "core"] },
                        "importance": { "type": "number" },
                        "content": { "type": "string" },
                        "reason": { "type": "string" }
                    },
                    "required": ["op", "ids"]
                }}},
                "required": ["operations"]
            }),
        ),
        2048,
    )
}

/// The proposed operations with ids resolved; an unknown id is kept as
/// given, so the sandbox refuses it by name.
pub fn parse_audit(arguments: &str, memories: &[Memory]) -> CoreResult<Vec<crate::model::AuditOp>> {
    let v = parse_json("audit", arguments)?;
    let mut out = Vec::new();
    for op in list("audit", &v, "operations")? {
        let ids = op["ids"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .map(|h| resolve(h, memories).map_or_else(|| h.to_string(), |m| m.id.clone()))
                    .collect()
            })
            .unwrap_or_default();
        out.push(crate::model::AuditOp {
            op: op["op"].as_str().unwrap_or_default().to_string(),
            ids,
            target_layer: op["layer"].as_str().and_then(|l| l.parse().ok()),
            importance: op["importance"].as_f64().map(|x| x as f32),
            content: op["content"].as_str().map(String::from),
            reason: op["reason"].as_str().unwrap_or_default().to_string(),
            allowed: false,
            verdict: String::new(),
        });
    }
    Ok(out)
}

// ---- query expansion and rerank ---------------------------------------------------

pub fn expand_request(query: &str) -> ChatRequest {
    request(
        "query_expand",
        EXPAND_PROMPT,
        format!("Query: {query}"),
        tool(
            "search_phrases",
            "Alternative search phrases for the query.",
            json!({
                "type": "object",
                "properties": { "phrases": { "type": "array", "items": { "type": "string" } } },
                "required": ["phrases"]
            }),
        ),
        256,
    )
}

/// At most `max` distinct non-empty phrases that differ from the query.
pub fn parse_expand(arguments: &str, query: &str, max: usize) -> CoreResult<Vec<String>> {
    let v = parse_json("query_expand", arguments)?;
    let mut out: Vec<String> = Vec::new();
    for p in list("query_expand", &v, "phrases")? {
        let Some(p) = p.as_str().map(str::trim).filter(|p| !p.is_empty()) else {
            continue;
        };
        if !p.eq_ignore_ascii_case(query.trim()) && !out.iter().any(|o| o.eq_ignore_ascii_case(p)) {
            out.push(p.chars().take(300).collect());
        }
    }
    out.truncate(max);
    Ok(out)
}

/// `candidates` are the texts to order, numbered from 0.
pub fn rerank_request(query: &str, candidates: &[&str]) -> ChatRequest {
    let mut user = format!("Query: {query}\n\nCandidates:\n");
    for (i, c) in candidates.iter().enumerate() {
        user.push_str(&format!(
            "{i}. {}\n",
            c.chars().take(500).collect::<String>()
        ));
    }
    request(
        "rerank",
        RERANK_SYSTEM,
        user,
        tool(
            "rank_candidates",
            "The candidate numbers, most relevant first.",
            json!({
                "type": "object",
                "properties": { "order": { "type": "array", "items": { "type": "integer" } } },
                "required": ["order"]
            }),
        ),
        256,
    )
}

/// A permutation of `0..n`: the model's order, then anything it left out in
/// the original order; out-of-range and repeated numbers are ignored.
pub fn parse_rerank(arguments: &str, n: usize) -> CoreResult<Vec<usize>> {
    let v = parse_json("rerank", arguments)?;
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for i in list("rerank", &v, "order")? {
        if let Some(i) = i.as_u64().map(|i| i as usize)
            && i < n
            && !order.contains(&i)
        {
            order.push(i);
        }
    }
    for i in 0..n {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    Ok(order)
}

// ---- topic naming -------------------------------------------------------------

/// `clusters` are (topic id, sample texts).
pub fn naming_request(clusters: &[(String, Vec<String>)], existing: &[String]) -> ChatRequest {
    let mut user = String::new();
    if !existing.is_empty() {
        user.push_str(&format!("Existing names: {}\n\n", existing.join("; ")));
    }
    for (id, samples) in clusters {
        user.push_str(&format!("Cluster {id}:\n"));
        for s in samples {
            user.push_str(&format!("  - {s}\n"));
        }
    }
    request(
        "naming",
        TOPIC_NAMING_SYSTEM,
        user,
        tool(
            "name_topics",
            "Name each cluster.",
            json!({
                "type": "object",
                "properties": { "names": { "type": "array", "items": {
                    "type": "object",
                    "properties": { "id": { "type": "string" }, "name": { "type": "string" } },
                    "required": ["id", "name"]
                }}},
                "required": ["names"]
            }),
        ),
        1024,
    )
}

/// (topic id, name) for the ids asked about.
pub fn parse_naming(arguments: &str, ids: &[String]) -> CoreResult<Vec<(String, String)>> {
    let v = parse_json("naming", arguments)?;
    let mut out = Vec::new();
    for n in list("naming", &v, "names")? {
        let (Some(id), Some(name)) = (n["id"].as_str(), n["name"].as_str()) else {
            continue;
        };
        let name = name.trim();
        if ids.iter().any(|i| i == id) && !name.is_empty() {
            out.push((id.to_string(), name.chars().take(60).collect()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(id: &str, content: &str) -> Memory {
        Memory::new(id.into(), "default".into(), content.into(), 0, 0)
    }

    #[test]
    fn gate_answers_resolve_short_ids_and_drop_unknown_ones() {
        let ms = [
            memory(
                "mem_0123456789abcdef",
                "Always run the tests before pushing",
            ),
            memory("mem_fedcba9876543210", "Deploy is at 5pm today"),
        ];
        let args = r#"{"decisions": [
            {"id": "89abcdef", "decision": "approve", "kind": "procedural", "reason": "rule"},
            {"id": "76543210", "decision": "reject"},
            {"id": "nope", "decision": "approve"}]}"#;
        let v = parse_gate(args, &ms).unwrap_or_default();
        assert_eq!(v.len(), 2);
        assert!(v[0].promote && v[0].kind == Some(Kind::Procedural));
        assert_eq!(v[1].id, "mem_fedcba9876543210");
        assert!(!v[1].promote);
        assert!(parse_gate("{}", &ms).is_err());
        assert!(parse_gate("not json", &ms).is_err());
    }

    #[test]
    fn the_heuristic_gate_follows_the_whitelist() {
        assert_eq!(
            gate_heuristic(&memory("a", "Never force-push to main")),
            Some("constraint")
        );
        assert_eq!(
            gate_heuristic(&memory("a", "Use the staging DB for now, never prod")),
            None
        );
        assert_eq!(
            gate_heuristic(&memory("a", "The meeting moved to Tuesday")),
            None
        );
    }

    #[test]
    fn extracted_facts_keep_triples_and_valid_turns() {
        let args = r#"{"facts": [
            {"content": "Caroline lives in Berlin", "subject": "Caroline", "predicate": "lives in",
             "object": "Berlin", "single_valued": true, "turns": [0, 7]},
            {"content": "  "},
            {"content": "Melanie paints", "kind": "semantic", "importance": 3}]}"#;
        let f = parse_extract(args, 2).unwrap_or_default();
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].triple,
            Some(("Caroline".into(), "lives in".into(), "Berlin".into()))
        );
        assert!(f[0].exclusive);
        assert_eq!(f[0].turns, vec![0]);
        assert_eq!(f[1].importance, Some(1.0));
    }
}
