//! Which namespaces a write holds (issue 43): the lock set a Postgres
//! write transaction takes (`postgres/mod.rs`, `begin`).

/// The namespaces a write serializes on. What must be serial — dedup's
/// read-then-insert, a cycle's plan-then-apply — is serial within a
/// namespace; writes of different namespaces never wait for each other.
/// A call over every namespace (a whole-store cycle, an import file) holds
/// them all. SQLite has one writer per file and ignores this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locks {
    /// Every namespace.
    All,
    /// These namespaces (taken in one order, so two calls never deadlock).
    Namespaces(Vec<String>),
}

impl Locks {
    /// One namespace, named as the core names it (empty is `default`).
    pub fn one(namespace: &str) -> Self {
        Self::Namespaces(vec![canonical(namespace)])
    }

    /// A namespace's own, or every one when the call names none.
    pub fn of(namespace: Option<&str>) -> Self {
        namespace.map_or(Self::All, Self::one)
    }

    /// A namespace and `default`, which a project namespace also reads and
    /// where its cross-namespace merges land (a review).
    pub fn with_default(namespace: Option<&str>) -> Self {
        match namespace {
            None => Self::All,
            Some(ns) => Self::Namespaces(vec![canonical(ns), canonical("")]),
        }
    }

    /// Each of these namespaces.
    pub fn each<'a>(namespaces: impl IntoIterator<Item = &'a str>) -> Self {
        Self::Namespaces(namespaces.into_iter().map(canonical).collect())
    }
}

/// The core's reading of a namespace argument (`validate::namespace`): a
/// name it refuses fails the call before it writes, whatever it locked.
fn canonical(namespace: &str) -> String {
    mnemo_core::valid_namespace(namespace).unwrap_or_else(|_| namespace.trim().to_string())
}
