//! `mnemo keys`: the scoped API keys of the store (issue 43, `keys.rs`),
//! for the operator at the store's own machine; `/keys` does the same over
//! HTTP with an admin key.

use clap::Subcommand;

use super::output::*;
use crate::Config;
use crate::keys::{self, KeyInfo, Role};
use crate::storage::Store;

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Make a key; it is printed once (the store keeps only its hash).
    Create {
        /// Who or what holds it.
        #[arg(long)]
        name: String,
        /// read, write, or admin (the operator's routes too).
        #[arg(long, default_value = "write")]
        role: Role,
        /// A namespace it may use: a name, a prefix ending in `*`
        /// (`team-a*`), or `*` for every one (repeat, or separate by commas).
        #[arg(
            long = "namespace",
            short = 'n',
            required = true,
            value_delimiter = ','
        )]
        namespaces: Vec<String>,
        /// A namespace it may only read (searched, listed, recalled; never
        /// written or reinforced): same forms, repeat or separate by commas.
        #[arg(long = "read", value_delimiter = ',')]
        reads: Vec<String>,
        /// Print the record and the key as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every key, revoked ones too.
    List {
        /// Print the keys as JSON.
        #[arg(long)]
        json: bool,
    },
    /// A new secret for a key; the old one stops working.
    Rotate {
        /// The key's id (`mnemo keys list`).
        id: String,
        /// Print the record and the new key as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key (it stays listed).
    Revoke {
        /// The key's id (`mnemo keys list`).
        id: String,
    },
}

pub(super) fn run(config: &Config, command: KeysCommand) -> Out {
    let store = Store::open(&config.db_path)?;
    let now = crate::ledger::now_ms();
    match command {
        KeysCommand::Create {
            name,
            role,
            namespaces,
            reads,
            json,
        } => {
            let (record, key) =
                keys::create(&store, &name, role, &namespaces, &reads, now).map_err(bad_input)?;
            issued(&KeyInfo::from(&record), &key, json)
        }
        KeysCommand::List { json } => {
            let infos: Vec<KeyInfo> = keys::list(&store)?.iter().map(KeyInfo::from).collect();
            if json {
                return print_json(&infos);
            }
            if infos.is_empty() {
                println!("no keys (MNEMO_API_KEY, if set, is the admin key)");
            }
            for k in &infos {
                let state = match k.revoked_at {
                    Some(at) => format!("revoked {}", utc_minute(at)),
                    None => "live".into(),
                };
                let reads = match k.reads.as_slice() {
                    [] => String::new(),
                    r => format!(" reads [{}]", r.join(", ")),
                };
                println!(
                    "{}  {}  {}  [{}]{reads}  made {}  {state}",
                    k.id,
                    k.name,
                    k.role.name(),
                    k.namespaces.join(", "),
                    utc_minute(k.created_at)
                );
            }
            Ok(())
        }
        KeysCommand::Rotate { id, json } => {
            let (record, key) = keys::rotate(&store, &id, now).map_err(bad_input)?;
            issued(&KeyInfo::from(&record), &key, json)
        }
        KeysCommand::Revoke { id } => {
            let record = keys::revoke(&store, &id, now).map_err(bad_input)?;
            println!("revoked {} ({})", record.id, record.name);
            Ok(())
        }
    }
}

fn issued(info: &KeyInfo, key: &str, json: bool) -> Out {
    if json {
        let mut v = serde_json::to_value(info).map_err(anyhow::Error::from)?;
        v["key"] = serde_json::Value::String(key.to_string());
        return print_json(&v);
    }
    println!(
        "key {} ({}, {}, namespaces {}{}):\n{key}\nit is shown once: the store keeps only its hash",
        info.id,
        info.name,
        info.role.name(),
        info.namespaces.join(", "),
        match info.reads.as_slice() {
            [] => String::new(),
            r => format!("; reads {}", r.join(", ")),
        }
    );
    Ok(())
}

fn bad_input(e: anyhow::Error) -> Failure {
    Failure {
        code: 2,
        message: format!("{e:#}"),
    }
}
