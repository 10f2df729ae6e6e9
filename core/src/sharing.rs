//! Who reads whose memories (issue 77), stated once for every read and
//! every step of the lifecycle.
//!
//! A namespace reads itself; the members of a sharing group the operator
//! declared read each other; and `default` is read by every namespace
//! while sharing is on — `auto` (the default) turns it on only for a store
//! without scoped API keys, so a single user's projects keep reading
//! `default` (seed 004 §7) and a multi-tenant store shares nothing its
//! operator did not choose to share. A host's key check decides which
//! namespaces a request may name; this decides what a named one shows.
//!
//! The lifecycle combines memories of two namespaces (a merge, a
//! reconcile, a summary) only within one group: content never moves from
//! one tenant to where another reads it.

use crate::engine::Engine;
use crate::error::CoreResult;
use crate::model::{Sharing, SharingMode};
use crate::ports::{Ports, Storage};
use crate::validate::DEFAULT_NAMESPACE;

/// Metadata key the host sets once the store has had a scoped API key
/// (`host/src/keys.rs`): from then on `auto` shares nothing.
pub const META_KEYS: &str = "api_keys";

impl<P: Ports> Engine<P> {
    /// The namespaces a read in `namespace` covers: itself first, then the
    /// other members of its groups, then `default` while shared.
    pub(crate) fn readable_namespaces(&self, namespace: &str) -> CoreResult<Vec<String>> {
        let mut out = vec![namespace.to_string()];
        for member in self
            .sharing
            .groups
            .iter()
            .filter(|g| in_group(g, namespace))
            .flatten()
        {
            if !out.contains(member) {
                out.push(member.clone());
            }
        }
        let default = DEFAULT_NAMESPACE.to_string();
        if !out.contains(&default) && self.shares_default()? {
            out.push(default);
        }
        Ok(out)
    }

    /// Whether every namespace reads `default` now.
    pub(crate) fn shares_default(&self) -> CoreResult<bool> {
        Ok(match self.sharing.mode {
            SharingMode::On => true,
            SharingMode::Off => false,
            SharingMode::Auto => self.ports().storage().get_meta(META_KEYS)?.is_none(),
        })
    }
}

/// Whether memories of `namespaces` may be combined into one: all of one
/// namespace, or all members of one declared group (sharing `default`
/// alone is not enough: a merge into `default` would show one tenant's
/// words to every other).
pub(crate) fn may_combine(sharing: &Sharing, namespaces: &[&str]) -> bool {
    let Some(first) = namespaces.first() else {
        return true;
    };
    namespaces.iter().all(|n| n == first)
        || sharing
            .groups
            .iter()
            .any(|g| namespaces.iter().all(|n| in_group(g, n)))
}

fn in_group(group: &[String], namespace: &str) -> bool {
    group.iter().any(|m| m == namespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Storage;
    use crate::testing::FakePorts;

    fn engine(mode: SharingMode, groups: &[&[&str]]) -> Engine<FakePorts> {
        Engine::new(FakePorts::default()).with_sharing(Sharing {
            mode,
            groups: groups
                .iter()
                .map(|g| g.iter().map(|s| s.to_string()).collect())
                .collect(),
        })
    }

    #[test]
    fn default_is_shared_until_the_store_has_scoped_keys() {
        let e = engine(SharingMode::Auto, &[]);
        assert_eq!(e.readable_namespaces("proj").unwrap(), ["proj", "default"]);
        assert_eq!(e.readable_namespaces("default").unwrap(), ["default"]);
        e.ports().storage().set_meta(META_KEYS, "1").unwrap();
        assert_eq!(e.readable_namespaces("proj").unwrap(), ["proj"]);
        let on = engine(SharingMode::On, &[]);
        on.ports().storage().set_meta(META_KEYS, "1").unwrap();
        assert_eq!(on.readable_namespaces("proj").unwrap(), ["proj", "default"]);
        let off = engine(SharingMode::Off, &[]);
        assert_eq!(off.readable_namespaces("proj").unwrap(), ["proj"]);
    }

    #[test]
    fn a_group_reads_itself_and_only_it_combines_namespaces() {
        let e = engine(SharingMode::Off, &[&["team-a", "team-b"], &["x", "y"]]);
        assert_eq!(
            e.readable_namespaces("team-b").unwrap(),
            ["team-b", "team-a"]
        );
        assert_eq!(e.readable_namespaces("z").unwrap(), ["z"]);
        assert!(may_combine(&e.sharing, &["team-a", "team-b"]));
        assert!(may_combine(&e.sharing, &["z", "z"]));
        assert!(!may_combine(&e.sharing, &["team-a", "x"]));
        assert!(!may_combine(&e.sharing, &["team-a", "default"]));
        let on = engine(SharingMode::On, &[]);
        assert!(!may_combine(&on.sharing, &["tenant-a", "default"]));
    }
}
