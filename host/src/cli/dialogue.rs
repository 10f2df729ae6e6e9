//! Commands on dialogue and what an agent reads: ingest, sessions, context,
//! resume, topics.

use mnemo_core::ports::Storage as _;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use crate::Mnemo;
use crate::storage::Locks;
use anyhow::Context;
use clap::Args;
use mnemo_core::model::*;

use super::output::*;

#[derive(Args)]
pub(super) struct IngestArgs {
    /// The turn's text (omit with --jsonl).
    text: Option<String>,
    /// The session the turn belongs to.
    #[arg(long)]
    session: Option<String>,
    /// user | assistant (or an agent name)
    #[arg(long)]
    role: Option<String>,
    /// JSON lines, one turn each: {"session_id", "role", "content", "namespace"?, "event_time"?}; `-` is stdin.
    #[arg(long, conflicts_with = "text")]
    jsonl: Option<PathBuf>,
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct SessionsArgs {
    /// A session id: print its turns in dialogue order.
    id: Option<String>,
    #[command(flatten)]
    ns: Ns,
    /// Only the sessions not yet consolidated.
    #[arg(long)]
    pending: bool,
    /// Most sessions listed.
    #[arg(long, default_value_t = 100)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ContextArgs {
    /// The prompt the agent is about to answer.
    prompt: String,
    #[command(flatten)]
    ns: Ns,
    /// The current session: its own memories are left out.
    #[arg(long)]
    session: Option<String>,
    /// Most facts injected.
    #[arg(long, default_value_t = 5)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct RecentArgs {
    #[command(flatten)]
    ns: Ns,
    /// Memories modified in the last this many hours.
    #[arg(long, default_value_t = 24)]
    hours: u32,
    /// Most memories listed.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct TriggersArgs {
    #[command(flatten)]
    ns: Ns,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ResumeArgs {
    #[command(flatten)]
    ns: Ns,
    /// The "Recent" window in hours.
    #[arg(long, default_value_t = 24)]
    hours: u32,
    /// What the session is about: Core and Recent keep what is relevant to it.
    #[arg(long)]
    context: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct TopicsArgs {
    /// Topic ids (kb1, kb2, ...); none lists the index.
    ids: Vec<String>,
    #[command(flatten)]
    ns: Ns,
    /// Rebuild the trees first.
    #[arg(long)]
    rebuild: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn sessions(mnemo: &mut Mnemo, a: SessionsArgs) -> Out {
    let store = &mnemo.ports().store;
    let ns = &a.ns.namespace;
    let Some(id) = &a.id else {
        let sessions = store.sessions(ns, a.pending, a.limit)?;
        if a.json {
            return print_json(&sessions);
        }
        for s in &sessions {
            let state = match s.consolidated_at {
                Some(at) => format!("consolidated at {at}"),
                None => "pending".to_string(),
            };
            println!(
                "{}  {} turns  last seen {}  {state}",
                s.id, s.turn_count, s.last_seen_at
            );
        }
        return Ok(());
    };
    let session = store
        .get_session(ns, id)
        .map_err(anyhow::Error::from)?
        .ok_or_else(|| Failure {
            code: 3,
            message: format!("no session `{id}` in namespace `{ns}`"),
        })?;
    let turns = store
        .session_episodes(ns, id, 0, a.limit)
        .map_err(anyhow::Error::from)?;
    if a.json {
        return print_json(&serde_json::json!({ "session": session, "episodes": turns }));
    }
    for t in &turns {
        println!("{}  {}: {}", t.event_time, t.source_role, t.content);
    }
    Ok(())
}

pub(super) fn context(mnemo: &mut Mnemo, a: ContextArgs) -> Out {
    let b = mnemo.context(&a.ns.namespace, &a.prompt, a.session.as_deref(), a.limit)?;
    if a.json {
        return print_json(&b);
    }
    print!("{}", b.text);
    Ok(())
}

pub(super) fn resume(mnemo: &mut Mnemo, a: ResumeArgs) -> Out {
    let r = mnemo.resume(ResumeRequest {
        namespace: a.ns.namespace,
        hours: a.hours,
        context: a.context,
    })?;
    if a.json {
        return print_json(&r);
    }
    print!("{}", r.text);
    Ok(())
}

pub(super) fn topics(mnemo: &mut Mnemo, a: TopicsArgs) -> Out {
    if a.rebuild {
        mnemo.rebuild_topics(Some(&a.ns.namespace))?;
    }
    let topics = mnemo.topics(&a.ns.namespace, &a.ids)?;
    if a.json {
        return print_json(&topics);
    }
    if topics.is_empty() {
        println!("no topics yet (they are built by `mnemo consolidate` or `--rebuild`)");
    }
    for t in topics {
        match (&t.parent, t.children.is_empty()) {
            (_, false) => println!(
                "{}: \"{}\" (topics {})",
                t.id,
                t.name,
                t.children.join(", ")
            ),
            (Some(p), true) => println!("{}: \"{}\" (in {p})", t.id, t.name),
            (None, true) => println!("{}: \"{}\"", t.id, t.name),
        }
        for m in &t.memories {
            println!("  {}  {}", m.id, one_line(&m.content, 100));
        }
    }
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnLine {
    session_id: String,
    role: String,
    content: String,
    namespace: Option<String>,
    event_time: Option<Millis>,
    attributes: Option<serde_json::Value>,
}

pub(super) fn ingest(mnemo: &mut Mnemo, a: IngestArgs) -> Out {
    let Some(path) = a.jsonl else {
        let turn = Turn {
            namespace: a.ns.namespace,
            session_id: a.session.unwrap_or_default(),
            role: a.role.unwrap_or_default(),
            content: a.text.unwrap_or_default(),
            ..Default::default()
        };
        let out = mnemo.ingest(turn)?;
        // Seed 003's session-switch trigger, as the server runs it: the
        // sessions a new one left open are consolidated, after the write.
        let consolidated = match out.pending_sessions.is_empty() {
            true => None,
            false => {
                Some(mnemo.consolidate_sessions(&out.episode.namespace, &out.pending_sessions)?)
            }
        };
        if a.json {
            return print_json(
                &serde_json::json!({ "ingested": out, "consolidated": consolidated }),
            );
        }
        println!(
            "stored {} in session {}",
            out.episode.id, out.episode.session_id
        );
        if let Some(r) = consolidated {
            println!(
                "consolidated the sessions it left open ({}): {} facts",
                out.pending_sessions.join(", "),
                r.facts_added
            );
        }
        return Ok(());
    };
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?,
        ))
    };
    // Parse everything first: a bad line means nothing is written.
    let mut turns = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.context("reading turns")?;
        if line.trim().is_empty() {
            continue;
        }
        let t: TurnLine = serde_json::from_str(&line).map_err(|e| Failure {
            code: 2,
            message: format!("line {}: {e}", i + 1),
        })?;
        turns.push(Turn {
            namespace: t.namespace.unwrap_or_else(|| a.ns.namespace.clone()),
            session_id: t.session_id,
            role: t.role,
            content: t.content,
            event_time: t.event_time,
            attributes: t.attributes.map(|v| v.to_string()),
        });
    }
    let bar = progress(turns.len() as u64, "ingesting");
    let stored = turns.len();
    let locks = Locks::each(turns.iter().map(|t| t.namespace.as_str()));
    mnemo.atomically(locks, |m| -> Out {
        for (i, t) in turns.into_iter().enumerate() {
            m.ingest(t).map_err(|e| {
                let f = Failure::from(e);
                Failure {
                    code: f.code,
                    message: format!("turn {}: {}", i + 1, f.message),
                }
            })?;
            bar.inc(1);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    let n = mnemo.backfill_all(256, |_| {})?;
    if a.json {
        return print_json(&serde_json::json!({ "stored": stored, "embedded": n }));
    }
    let _ = writeln!(std::io::stdout(), "stored {stored} turns");
    Ok(())
}

/// Memories modified in the last hours, newest first (`GET /recent`).
pub(super) fn recent(mnemo: &mut Mnemo, a: RecentArgs) -> Out {
    let list = mnemo.recent(&a.ns.namespace, a.hours, a.limit)?;
    if a.json {
        return print_json(&list);
    }
    list.iter().for_each(print_memory);
    Ok(())
}

/// `trigger:*` tags by summed access (`GET /triggers`).
pub(super) fn triggers(mnemo: &mut Mnemo, a: TriggersArgs) -> Out {
    let list = mnemo.triggers(&a.ns.namespace)?;
    if a.json {
        let v: Vec<serde_json::Value> = list
            .iter()
            .map(|(name, access)| serde_json::json!({ "name": name, "access": access }))
            .collect();
        return print_json(&v);
    }
    for (name, access) in list {
        println!("{name}  ({access} reads)");
    }
    Ok(())
}
