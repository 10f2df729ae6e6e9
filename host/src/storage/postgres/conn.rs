//! One Postgres connection and the statements prepared on it.
//!
//! Every query of the store is built as text and run with parameters. Run
//! as text, each one is parsed, analysed and described again, one round
//! trip more than its execution: in a `perf` profile of Postgres while 4
//! writers filled a store, the parser, the catalog cache and the
//! expression copies were the largest part of a flat profile. Here each
//! text is prepared once per connection and kept. Plans are unchanged:
//! every connection sets `plan_cache_mode = force_custom_plan` (`mod.rs`),
//! so a kept statement is still planned for its own parameters each time.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};

/// Statements kept per connection; past it the cache is emptied (each
/// dropped statement is closed on the server). The store's texts vary by
/// the number of terms or values they bind, a few hundred shapes.
const PREPARED_MAX: usize = 512;

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

pub(super) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Conn {
    pub(super) fn new(client: Client) -> Self {
        Self {
            client,
            prepared: HashMap::new(),
        }
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        if self.prepared.len() >= PREPARED_MAX {
            self.prepared.clear();
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Runs `run` with `sql`'s statement. A statement whose execution
    /// failed is prepared again next time: a schema change by another
    /// server can leave a kept one unusable ("cached plan must not change
    /// result type").
    fn with<T>(
        &mut self,
        sql: &str,
        run: impl FnOnce(&mut Client, &Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, postgres::Error> {
        let s = self.statement(sql)?;
        let out = run(&mut self.client, &s);
        if out.is_err() {
            self.prepared.remove(sql);
        }
        out
    }

    pub(super) fn query(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        self.with(sql, |c, s| c.query(s, params))
    }

    pub(super) fn query_one(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Row, postgres::Error> {
        self.with(sql, |c, s| c.query_one(s, params))
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        self.with(sql, |c, s| c.query_opt(s, params))
    }

    pub(super) fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, postgres::Error> {
        self.with(sql, |c, s| c.execute(s, params))
    }
}

/// The client itself for the rest (transactions, simple queries).
impl Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}
