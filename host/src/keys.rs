//! API keys scoped to namespaces (issue 43): many keys, each with the
//! namespaces it may use (exact names, or a prefix ending in `*`: `team-a*`)
//! and a role — `read`, `write`, or `admin` for the operator's routes.
//!
//! A key writes (and reads) its `namespaces` and only reads its `reads`
//! (issue 77): a dashboard's key reads every tenant and writes none; an
//! agent's reads a shared namespace beside its own. A read by a key that
//! may not write the namespace reinforces nothing there.
//!
//! A key is `mnemo_<id>_<secret>`; the store keeps its SHA-256, never the
//! key, in the metadata table (`api_key:<id>`), so every server of a
//! deployment sees the same keys and a copy of the store gives none away.
//! A revoked key stays listed with the time it was revoked; a rotation
//! gives the same id (and scopes) a new secret, and the old one stops
//! working. `MNEMO_API_KEY` remains an admin key of every namespace.

use std::io::Read;

use anyhow::{Context, bail};
use mnemo_core::ports::Storage;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::storage::Store;

/// Metadata key prefix of a key's record.
const META_PREFIX: &str = "api_key:";
/// Metadata key set once the store has had a key: from then on every
/// request needs one (read without listing the keys), and `auto` sharing
/// shares nothing (the core reads it: `mnemo_core::META_KEYS`).
const META_ANY: &str = mnemo_core::META_KEYS;
/// The prefix of every key mnemo makes.
const TOKEN_PREFIX: &str = "mnemo_";
/// Random bytes of an id and of a secret.
const ID_BYTES: usize = 6;
const SECRET_BYTES: usize = 24;

/// What a key may do, each role including the ones before it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads: recall, context, lists, graphs.
    Read,
    /// Reads and writes of memories, turns, facts.
    Write,
    /// The operator's routes too: export, import, review, consolidate,
    /// decisions, usage, keys.
    Admin,
}

impl std::str::FromStr for Role {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "read" => Ok(Self::Read),
            "write" => Ok(Self::Write),
            "admin" => Ok(Self::Admin),
            other => bail!("role `{other}` is not one of read, write, admin"),
        }
    }
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }
}

/// The namespaces a key may use: exact names and prefixes (`team-a*`);
/// `*` alone is every namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope(pub Vec<String>);

impl Scope {
    /// Checked patterns: a namespace's characters, with one `*` at the end.
    pub fn parse(patterns: &[String]) -> anyhow::Result<Self> {
        if patterns.is_empty() {
            bail!(
                "a key needs at least one namespace (a name, a prefix such as `team-a*`, or `*`)"
            );
        }
        Self::parse_any(patterns)
    }

    /// Checked patterns, none at all allowed (a key's read-only list).
    pub fn parse_any(patterns: &[String]) -> anyhow::Result<Self> {
        for p in patterns {
            let name = p.strip_suffix('*').unwrap_or(p);
            if name.contains('*') {
                bail!("`{p}`: `*` may only end a namespace pattern");
            }
            if !name.is_empty() {
                mnemo_core::valid_namespace(name).map_err(|e| anyhow::anyhow!("`{p}`: {e}"))?;
            }
        }
        Ok(Self(patterns.to_vec()))
    }

    pub fn allows(&self, namespace: &str) -> bool {
        self.0.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => namespace.starts_with(prefix),
            None => p == namespace,
        })
    }

    /// Whether it covers every namespace (what a whole-store call needs).
    pub fn is_all(&self) -> bool {
        self.0.iter().any(|p| p == "*")
    }

    /// Its one namespace, when it names exactly one and no prefix: what a
    /// request naming none means.
    pub fn single(&self) -> Option<&str> {
        match self.0.as_slice() {
            [only] if !only.ends_with('*') => Some(only),
            _ => None,
        }
    }
}

impl KeyRecord {
    /// Whether it may read `namespace`.
    pub fn may_read(&self, namespace: &str) -> bool {
        self.namespaces.allows(namespace) || self.reads.allows(namespace)
    }

    /// Whether it may write `namespace` (its role and its scope).
    pub fn may_write(&self, namespace: &str) -> bool {
        self.role >= Role::Write && self.namespaces.allows(namespace)
    }
}

/// One key as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub role: Role,
    /// What it writes and reads.
    pub namespaces: Scope,
    /// What it only reads (none for keys made before issue 77).
    #[serde(default)]
    pub reads: Scope,
    /// Hex SHA-256 of the whole key.
    pub hash: String,
    pub created_at: i64,
    /// When the secret was last replaced (`rotate`).
    #[serde(default)]
    pub rotated_at: Option<i64>,
    #[serde(default)]
    pub revoked_at: Option<i64>,
}

/// A key as listed: its record without the hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeyInfo {
    /// The key's id (the part after `mnemo_`; the secret follows it).
    pub id: String,
    /// Who or what holds it.
    pub name: String,
    /// read, write or admin.
    pub role: Role,
    /// What it writes and reads: names, prefixes ending in `*`, or `*`
    /// for every namespace.
    pub namespaces: Vec<String>,
    /// What it only reads, in the same form.
    pub reads: Vec<String>,
    /// When it was made (ms since the epoch).
    pub created_at: i64,
    /// When its secret was last replaced.
    pub rotated_at: Option<i64>,
    /// When it was revoked; a revoked key opens nothing.
    pub revoked_at: Option<i64>,
}

impl From<&KeyRecord> for KeyInfo {
    fn from(r: &KeyRecord) -> Self {
        Self {
            id: r.id.clone(),
            name: r.name.clone(),
            role: r.role,
            namespaces: r.namespaces.0.clone(),
            reads: r.reads.0.clone(),
            created_at: r.created_at,
            rotated_at: r.rotated_at,
            revoked_at: r.revoked_at,
        }
    }
}

/// Hex SHA-256 of a key: what the store keeps.
pub fn hash(token: &str) -> String {
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Constant-time comparison: the time taken does not depend on where the
/// strings differ.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .context("reading /dev/urandom for a key")?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The id a key names (`mnemo_<id>_<secret>`), if it has mnemo's form.
pub fn id_of(token: &str) -> Option<&str> {
    let (id, secret) = token.strip_prefix(TOKEN_PREFIX)?.split_once('_')?;
    (!id.is_empty() && !secret.is_empty()).then_some(id)
}

fn record(store: &Store, id: &str) -> anyhow::Result<Option<KeyRecord>> {
    let Some(json) = store.get_meta(&format!("{META_PREFIX}{id}"))? else {
        return Ok(None);
    };
    Ok(Some(
        serde_json::from_str(&json).with_context(|| format!("reading key {id}"))?,
    ))
}

fn save(store: &Store, r: &KeyRecord) -> anyhow::Result<()> {
    store.set_meta(
        &format!("{META_PREFIX}{}", r.id),
        &serde_json::to_string(r)?,
    )?;
    store.set_meta(META_ANY, "1")?;
    Ok(())
}

/// Whether the store has ever had a key (a revoked one counts: a store
/// whose keys were all revoked does not fall open).
pub fn any(store: &Store) -> anyhow::Result<bool> {
    Ok(store.get_meta(META_ANY)?.is_some())
}

/// The live record `token` is the key of (`None`: unknown, wrong or revoked).
pub fn verify(store: &Store, token: &str) -> anyhow::Result<Option<KeyRecord>> {
    let Some(id) = id_of(token) else {
        return Ok(None);
    };
    let found = record(store, id)?;
    Ok(found.filter(|r| {
        r.revoked_at.is_none() && same_secret(r.hash.as_bytes(), hash(token).as_bytes())
    }))
}

/// Makes a key of the `namespaces` it writes (and reads) and the `reads`
/// it only reads; returns its record and the key itself (shown once).
pub fn create(
    store: &Store,
    name: &str,
    role: Role,
    namespaces: &[String],
    reads: &[String],
    now: i64,
) -> anyhow::Result<(KeyRecord, String)> {
    let scope = Scope::parse(namespaces)?;
    let reads = Scope::parse_any(reads)?;
    let id = random_hex(ID_BYTES)?;
    let token = format!("{TOKEN_PREFIX}{id}_{}", random_hex(SECRET_BYTES)?);
    let r = KeyRecord {
        id,
        name: name.to_string(),
        role,
        namespaces: scope,
        reads,
        hash: hash(&token),
        created_at: now,
        rotated_at: None,
        revoked_at: None,
    };
    save(store, &r)?;
    Ok((r, token))
}

/// Every key, revoked ones included, oldest first.
pub fn list(store: &Store) -> anyhow::Result<Vec<KeyRecord>> {
    let mut out: Vec<KeyRecord> = store
        .all_meta()?
        .into_iter()
        .filter(|(k, _)| k.starts_with(META_PREFIX))
        .map(|(k, v)| serde_json::from_str(&v).with_context(|| format!("reading {k}")))
        .collect::<anyhow::Result<_>>()?;
    out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(out)
}

/// A new secret for key `id`; the old key stops working. Returns the new key.
pub fn rotate(store: &Store, id: &str, now: i64) -> anyhow::Result<(KeyRecord, String)> {
    let Some(mut r) = record(store, id)? else {
        bail!("no key `{id}`");
    };
    if r.revoked_at.is_some() {
        bail!("key `{id}` is revoked");
    }
    let token = format!("{TOKEN_PREFIX}{id}_{}", random_hex(SECRET_BYTES)?);
    r.hash = hash(&token);
    r.rotated_at = Some(now);
    save(store, &r)?;
    Ok((r, token))
}

/// Revokes key `id` (it stays listed, with the time).
pub fn revoke(store: &Store, id: &str, now: i64) -> anyhow::Result<KeyRecord> {
    let Some(mut r) = record(store, id)? else {
        bail!("no key `{id}`");
    };
    if r.revoked_at.is_none() {
        r.revoked_at = Some(now);
        save(store, &r)?;
    }
    Ok(r)
}
