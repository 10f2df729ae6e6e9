//! Commands on facts and entities: facts, entity, ner.

use crate::{Config, Mnemo};
use clap::Args;
use mnemo_core::model::*;

use super::output::*;

#[derive(Args)]
pub(super) struct EntityArgs {
    /// The entity's name (or an alias).
    name: String,
    #[command(flatten)]
    ns: Ns,
    /// Most linked memories and episodes shown.
    #[arg(long, default_value_t = 20)]
    limit: u32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct NerArgs {
    /// The text to find entities in.
    text: String,
    /// fast | accurate
    #[arg(long, default_value = "fast")]
    strategy: NerStrategy,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(super) fn entity(mnemo: &mut Mnemo, a: EntityArgs) -> Out {
    let profiles = mnemo.entity_info(&a.ns.namespace, &a.name, a.limit)?;
    if a.json {
        return print_json(&profiles);
    }
    if profiles.is_empty() {
        return Err(Failure {
            code: 3,
            message: format!("no entity named `{}`", a.name),
        });
    }
    for p in &profiles {
        let e = &p.entity;
        println!(
            "{} ({}) — {} mentions; aliases: {}",
            e.canonical_name,
            e.entity_type.as_str(),
            e.mention_count,
            e.aliases.join(", ")
        );
        p.memories.iter().for_each(print_memory);
        for ep in &p.episodes {
            println!(
                "{}  [{} {}]  {}",
                ep.id,
                ep.session_id,
                ep.source_role,
                one_line(&ep.content, 100)
            );
        }
    }
    Ok(())
}

#[derive(clap::Subcommand)]
pub(super) enum FactsCommand {
    /// Add a (subject, predicate, object) triple.
    Add {
        /// Who or what the fact is about.
        subject: String,
        /// The relation (`lives_in`, `works_at`, ...).
        predicate: String,
        /// The value.
        object: String,
        #[command(flatten)]
        ns: Ns,
        /// The predicate holds one value: supersede the subject's other objects.
        #[arg(long)]
        exclusive: bool,
    },
    /// Valid facts about an entity (as subject or object).
    Query {
        /// The entity whose facts to list.
        entity: String,
        #[command(flatten)]
        ns: Ns,
        /// Superseded facts too.
        #[arg(long)]
        history: bool,
    },
    /// Facts reachable from an entity in up to two hops.
    Graph {
        /// The entity to start from.
        entity: String,
        #[command(flatten)]
        ns: Ns,
        /// How many links to follow (at most 2).
        #[arg(long, default_value_t = 2)]
        hops: u32,
    },
    /// Valid facts that disagree (same subject and predicate).
    Conflicts {
        #[command(flatten)]
        ns: Ns,
    },
}

fn print_facts(facts: &[Fact]) {
    if facts.is_empty() {
        println!("no facts");
    }
    for f in facts {
        let state = match &f.superseded_by {
            Some(by) => format!("  (superseded by {by})"),
            None => String::new(),
        };
        println!(
            "{}  {} | {} | {}{state}",
            f.id, f.subject, f.predicate, f.object
        );
    }
}

pub(super) fn facts(mnemo: &mut Mnemo, c: FactsCommand) -> Out {
    match c {
        FactsCommand::Add {
            subject,
            predicate,
            object,
            ns,
            exclusive,
        } => {
            let out = mnemo.add_fact(FactInput {
                namespace: ns.namespace,
                subject,
                predicate,
                object,
                exclusive,
                ..Default::default()
            })?;
            print_facts(std::slice::from_ref(&out.fact));
            for old in out.superseded {
                println!("superseded {} ({})", old.id, old.object);
            }
        }
        FactsCommand::Query {
            entity,
            ns,
            history,
        } => print_facts(&mnemo.query_facts(FactQuery {
            namespaces: vec![ns.namespace],
            entity: Some(entity),
            include_invalid: history,
            ..Default::default()
        })?),
        FactsCommand::Graph { entity, ns, hops } => {
            print_facts(&mnemo.fact_graph(&ns.namespace, &entity, hops)?)
        }
        FactsCommand::Conflicts { ns } => {
            let pairs = mnemo.fact_conflicts(&ns.namespace)?;
            if pairs.is_empty() {
                println!("no conflicts");
            }
            for (a, b) in pairs {
                println!(
                    "{} {}: `{}` ({}) vs `{}` ({})",
                    a.subject, a.predicate, a.object, a.id, b.object, b.id
                );
            }
        }
    }
    Ok(())
}

pub(super) fn ner(config: &Config, a: &NerArgs) -> Out {
    let pipeline = crate::mnemo::ner_pipeline(config)?;
    let (mentions, failures) = pipeline.extract_reporting(&a.text, a.strategy);
    for f in &failures {
        eprintln!("warning: {f}");
    }
    if a.json {
        return print_json(&mentions);
    }
    if mentions.is_empty() {
        println!("no entities");
    }
    for m in &mentions {
        println!(
            "{:<14} {:<30} {:>4}..{:<4} {:.2}  {}",
            m.entity_type.as_str(),
            m.text,
            m.start,
            m.end,
            m.confidence,
            m.provider
        );
    }
    Ok(())
}
