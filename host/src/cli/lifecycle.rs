//! Lifecycle commands: consolidate, fade, enrich, reflect, and the decision
//! log (`decisions`, alias `audit`) and the LLM review (`review`).

use crate::Mnemo;
use crate::storage::DecisionFilter;
use clap::Args;
use mnemo_core::model::*;

use super::output::*;

#[derive(Args)]
pub(super) struct ConsolidateArgs {
    /// Only this namespace (default: every namespace).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Report what would happen; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Close sessions idle this many minutes (default: the configured
    /// `session_idle_minutes`, else 30); `0` closes every open session.
    #[arg(long)]
    idle: Option<u32>,
    /// First make every item whose LLM step failed due now, parked ones too
    /// (`mnemo llm-waiting` lists them), so this cycle tries them again.
    #[arg(long)]
    retry: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct EnrichArgs {
    /// Items per target (memories, episodes) this run.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ReflectArgs {
    #[command(flatten)]
    ns: Ns,
    /// Write one even if the last is less than six days old.
    #[arg(long)]
    force: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ReviewArgs {
    /// Show the proposals and verdicts; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Only this namespace.
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct DecisionsArgs {
    /// Run the LLM review instead (the round 1 spelling `audit --run`;
    /// prefer `mnemo review`).
    #[arg(long, hide = true)]
    run: bool,
    /// With --run: show the proposals and verdicts; change nothing.
    #[arg(long, requires = "run", hide = true)]
    dry_run: bool,
    /// Only this namespace (and, reading the log, the store-wide entries
    /// such as scheduled runs).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// How many entries to read, newest first.
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Only decisions about this memory, episode or session.
    #[arg(long)]
    target: Option<String>,
    /// Only this action: promote, demote, merge, evict, supersede, inject,
    /// delete, restore, reinforce, scheduled, ...
    #[arg(long)]
    action: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn consolidate(mnemo: &mut Mnemo, a: ConsolidateArgs) -> Out {
    if a.retry && !a.dry_run {
        let n = mnemo.retry_waiting(a.namespace.as_deref(), None)?;
        if !a.json {
            println!("{n} waiting item(s) made due now");
        }
    }
    let req = ConsolidateRequest {
        namespace: a.namespace,
        dry: a.dry_run,
        if_changed: false,
        session_idle_minutes: a.idle,
        ..Default::default()
    };
    let r = mnemo.consolidate_as_configured(req)?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "epoch {}{}: examined {}, decayed {}, {} sessions consolidated, {} facts added, {} topics",
        r.epoch,
        if r.dry {
            " (dry run: nothing written)"
        } else {
            ""
        },
        r.examined,
        r.decayed,
        r.sessions.len(),
        r.facts_added,
        r.topics
    );
    for x in &r.actions {
        let layers = match (x.from_layer, x.to_layer) {
            (Some(f), Some(t)) => format!(" {f}→{t}"),
            _ => String::new(),
        };
        println!("  {:<12} {}{layers}  {}", x.action, x.memory_id, x.detail);
    }
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}

pub(super) fn enrich(mnemo: &mut Mnemo, a: EnrichArgs) -> Out {
    let r = mnemo.enrich(a.limit)?;
    if a.json {
        return print_json(&r);
    }
    if r.ran {
        println!("examined {}, linked {} entities", r.examined, r.linked);
    } else {
        println!("skipped: no accurate NER provider beyond the fast ones");
    }
    Ok(())
}

pub(super) fn reflect(mnemo: &mut Mnemo, a: ReflectArgs) -> Out {
    let r = mnemo.reflect(&a.ns.namespace, a.force)?;
    if a.json {
        return print_json(&r);
    }
    match (&r.memory, &r.skipped) {
        (Some(m), _) => println!("{}  {}", m.id, m.content),
        (None, Some(why)) => println!("no reflection: {why}"),
        (None, None) => {}
    }
    Ok(())
}

pub(super) fn fade(mnemo: &mut Mnemo, json: bool) -> Out {
    let r = mnemo.fade_as_configured()?;
    if json {
        return print_json(&r);
    }
    println!(
        "examined {}, faded {}, moved {} to the trash",
        r.examined, r.faded, r.pruned
    );
    Ok(())
}

/// Seed 004's LLM review of Working and Core, under the review rules.
pub(super) fn review(mnemo: &mut Mnemo, a: ReviewArgs) -> Out {
    let r = mnemo.review(a.namespace.as_deref(), a.dry_run)?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "{} proposals, {:.0}% passed the review rules, {} applied{}",
        r.ops.len(),
        r.safety * 100.0,
        r.executed,
        if r.dry { " (dry run)" } else { "" }
    );
    for o in &r.ops {
        let mark = if o.allowed { "ok " } else { "no " };
        println!(
            "  {mark} {:<8} {}  {}{}",
            o.op,
            o.ids.join(","),
            o.reason,
            if o.verdict.is_empty() {
                String::new()
            } else {
                format!("  [{}]", o.verdict)
            }
        );
    }
    Ok(())
}

/// The decision log, newest first (or, with the hidden `--run`, a review).
pub(super) fn decisions(mnemo: &mut Mnemo, a: DecisionsArgs) -> Out {
    if a.run {
        return review(
            mnemo,
            ReviewArgs {
                dry_run: a.dry_run,
                namespace: a.namespace,
                json: a.json,
            },
        );
    }
    let entries = mnemo.ports().store.decision_log(&DecisionFilter {
        limit: a.limit,
        target: a.target.clone(),
        action: a.action.clone(),
        namespace: a.namespace.clone(),
        since: None,
    })?;
    if a.json {
        return print_json(&entries);
    }
    for e in &entries {
        println!(
            "{}  {:<10} {:<12} {}  {}",
            e.at, e.namespace, e.action, e.target_id, e.detail
        );
    }
    Ok(())
}
