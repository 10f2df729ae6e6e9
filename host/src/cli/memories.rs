//! Commands on memories: remember, recall, get, list, edit, delete,
//! restore, history (and revert).

use crate::Mnemo;
use clap::Args;
use mnemo_core::model::*;

use super::output::*;

#[derive(Args)]
pub(super) struct RememberArgs {
    /// The memory's text.
    text: String,
    /// A tag (repeatable; at most 20).
    #[arg(long = "tag", short = 't')]
    tags: Vec<String>,
    /// episodic | semantic | procedural
    #[arg(long)]
    kind: Option<Kind>,
    /// Where it came from (a free label, at most 64 characters).
    #[arg(long)]
    source: Option<String>,
    /// Importance, from 0 to 1.
    #[arg(long)]
    importance: Option<f32>,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct RecallArgs {
    /// What to look for, in plain words.
    query: String,
    /// Most hits returned.
    #[arg(long, default_value_t = 10)]
    limit: u32,
    /// Hits skipped first (paging).
    #[arg(long, default_value_t = 0)]
    offset: u32,
    #[command(flatten)]
    ns: Ns,
    /// Rank memories with this tag higher (repeatable; a soft boost, not a filter).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Only these kinds (repeatable: `episodic`, `semantic`, `procedural`).
    #[arg(long = "kind")]
    kinds: Vec<Kind>,
    /// Only these layers (repeatable: `buffer`, `working`, `core`).
    #[arg(long = "layer")]
    layers: Vec<Layer>,
    /// Search dialogue episodes too.
    #[arg(long)]
    episodes: bool,
    /// Don't reinforce the hits.
    #[arg(long)]
    dry: bool,
    /// Leave out hits scoring under this.
    #[arg(long)]
    min_score: Option<f32>,
    /// LLM query expansion: always (`--expand`) or never (`--no-expand`);
    /// default: automatic when the best hit is weak (LLM level not `off`).
    #[arg(long, conflicts_with = "no_expand")]
    expand: bool,
    /// Never expand the query with the LLM.
    #[arg(long)]
    no_expand: bool,
    /// Let the LLM re-order the hits.
    #[arg(long)]
    rerank: bool,
    /// How evidence becomes relevance: `blend` (BM25 and cosine weighed
    /// equally; for the local model) or `semantic` (seed 004's cosine-led
    /// relevance; for a strong embedder).
    #[arg(long, default_value = "blend")]
    relevance: Relevance,
    /// Print how each hit was scored.
    #[arg(long)]
    explain: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct IdArgs {
    /// The memory's id.
    id: String,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct EditArgs {
    /// The memory's id.
    id: String,
    /// The new text (the old one is kept as a version).
    #[arg(long)]
    content: Option<String>,
    /// Replace the tags (repeatable).
    #[arg(long = "tag")]
    tags: Option<Vec<String>>,
    /// New importance, from 0 to 1.
    #[arg(long)]
    importance: Option<f32>,
    /// New kind: `episodic`, `semantic` or `procedural`.
    #[arg(long)]
    kind: Option<Kind>,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct CorrectArgs {
    /// The id of the memory being corrected.
    id: String,
    /// The corrected text: stored as a new memory that supersedes the old one.
    content: String,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct HistoryArgs {
    /// The memory's id.
    id: String,
    /// Put this version back (the state it replaces is kept as a version too).
    #[arg(long, value_name = "VERSION")]
    revert: Option<u32>,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ListArgs {
    #[command(flatten)]
    ns: Ns,
    /// List the trash (soft-deleted memories) instead.
    #[arg(long)]
    deleted: bool,
    /// Only these layers (repeatable).
    #[arg(long = "layer")]
    layers: Vec<Layer>,
    /// Only these kinds (repeatable).
    #[arg(long = "kind")]
    kinds: Vec<Kind>,
    /// Only memories carrying every one of these tags (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Most memories listed.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Memories skipped first (paging).
    #[arg(long, default_value_t = 0)]
    offset: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct DeleteArgs {
    /// The memory's id.
    id: String,
    /// Why it goes (kept with it in the trash).
    #[arg(long, default_value = "deleted")]
    reason: String,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn remember(mnemo: &mut Mnemo, a: RememberArgs) -> Out {
    let out = mnemo.remember(RememberRequest {
        namespace: a.ns.namespace,
        content: a.text,
        kind: a.kind,
        tags: a.tags,
        source: a.source,
        importance: a.importance,
        ..Default::default()
    })?;
    if a.json {
        return print_json(&out);
    }
    match out.dedup_reason {
        None => println!("remembered {}", out.memory.id),
        Some(r) => println!(
            "reinforced {} ({r} duplicate; repetitions: {})",
            out.memory.id, out.memory.repetition_count
        ),
    }
    Ok(())
}

pub(super) fn recall(mnemo: &mut Mnemo, a: RecallArgs) -> Out {
    let res = mnemo.recall(RecallRequest {
        query: a.query,
        namespace: a.ns.namespace,
        limit: a.limit,
        offset: a.offset,
        tags: a.tags,
        kinds: a.kinds,
        layers: a.layers,
        include_episodes: a.episodes,
        dry: a.dry,
        expand: match (a.expand, a.no_expand) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        rerank: a.rerank,
        relevance: a.relevance,
        min_score: a.min_score,
        ..Default::default()
    })?;
    if a.json {
        return print_json(&res);
    }
    for w in &res.warnings {
        eprintln!("note: {w}");
    }
    if res.hits.is_empty() {
        println!("no memories found");
    }
    for (i, h) in res.hits.iter().enumerate() {
        println!(
            "{:>2}. {:.3}  {}  {}",
            i + 1,
            h.score,
            h.item.id(),
            one_line(h.item.content(), 100)
        );
        if a.explain {
            let e = &h.explanation;
            let chans: Vec<String> = e
                .channels
                .iter()
                .map(|c| format!("{}#{} ({:.3})", c.channel, c.rank, c.raw_score))
                .collect();
            println!(
                "      channels: {}  rrf {:.4}\n      relevance {:.3}  importance {:.3}  recency {:.3}  layer x{:.2}",
                chans.join(", "),
                e.rrf,
                e.relevance,
                e.importance,
                e.recency,
                e.layer_bonus
            );
            for n in &e.notes {
                println!("      - {n}");
            }
        }
    }
    Ok(())
}

pub(super) fn get(mnemo: &mut Mnemo, a: IdArgs) -> Out {
    let m = mnemo.get(&a.ns.namespace, &a.id)?;
    if a.json {
        return print_json(&m);
    }
    print_memory(&m);
    println!(
        "  importance {:.2}  confidence {:.2}  accessed {}x  repeated {}x  tags [{}]",
        m.importance,
        m.confidence,
        m.access_count,
        m.repetition_count,
        m.tags.join(", ")
    );
    Ok(())
}

pub(super) fn list(mnemo: &mut Mnemo, a: ListArgs) -> Out {
    let list = mnemo.list(ListRequest {
        namespace: a.ns.namespace,
        layers: a.layers,
        kinds: a.kinds,
        tags: a.tags,
        deleted: a.deleted,
        limit: a.limit,
        offset: a.offset,
    })?;
    if a.json {
        return print_json(&list);
    }
    list.iter().for_each(print_memory);
    Ok(())
}

pub(super) fn delete(mnemo: &mut Mnemo, a: DeleteArgs) -> Out {
    let m = mnemo.delete(&a.ns.namespace, &a.id, &a.reason)?;
    if a.json {
        return print_json(&m);
    }
    println!("deleted {} (restore with `mnemo restore {}`)", m.id, m.id);
    Ok(())
}

pub(super) fn restore(mnemo: &mut Mnemo, a: IdArgs) -> Out {
    let m = mnemo.restore(&a.ns.namespace, &a.id)?;
    if a.json {
        return print_json(&m);
    }
    println!("restored {}", m.id);
    Ok(())
}

pub(super) fn edit(mnemo: &mut Mnemo, a: EditArgs) -> Out {
    let patch = MemoryPatch {
        content: a.content,
        tags: a.tags,
        importance: a.importance,
        kind: a.kind,
        attributes: None,
    };
    let m = mnemo.update(&a.ns.namespace, &a.id, patch)?;
    if a.json {
        return print_json(&m);
    }
    println!("edited {} (earlier states: `mnemo history {}`)", m.id, m.id);
    Ok(())
}

/// The states a memory had, oldest first, then what it is now; or a revert.
pub(super) fn history(mnemo: &mut Mnemo, a: HistoryArgs) -> Out {
    if let Some(seq) = a.revert {
        let m = mnemo.revert(&a.ns.namespace, &a.id, seq)?;
        if a.json {
            return print_json(&m);
        }
        println!("reverted {} to version {seq}", m.id);
        return Ok(());
    }
    let versions = mnemo.history(&a.ns.namespace, &a.id)?;
    let now = mnemo.get(&a.ns.namespace, &a.id)?;
    if a.json {
        return print_json(&serde_json::json!({ "memory": now, "versions": versions }));
    }
    for v in &versions {
        println!(
            "v{}  replaced at {} by {}: {}",
            v.seq,
            v.replaced_at,
            v.action,
            one_line(&v.reason, 80)
        );
        println!("    {}", one_line(&v.memory.content, 100));
    }
    println!("now {}", one_line(&now.content, 100));
    Ok(())
}

/// Seed 003's `confirm_fact`: protected from fading and eviction for good.
pub(super) fn confirm(mnemo: &mut Mnemo, a: IdArgs) -> Out {
    let m = mnemo.confirm(&a.ns.namespace, &a.id)?;
    if a.json {
        return print_json(&m);
    }
    println!("confirmed {} (protected: decay_rate 0, confidence 1)", m.id);
    Ok(())
}

/// Seed 003's `correct_fact`: the old memory is superseded (in the trash,
/// linked) by the corrected one.
pub(super) fn correct(mnemo: &mut Mnemo, a: CorrectArgs) -> Out {
    let m = mnemo.correct(&a.ns.namespace, &a.id, &a.content)?;
    if a.json {
        return print_json(&m);
    }
    println!("{} supersedes {}", m.id, a.id);
    Ok(())
}
