//! The vector tables (sqlite-vec `vec0`, cosine) and the embedding lock: the
//! first model and dimension are written to `metadata`; a different embedder
//! later disables vector search with a message saying how to fix it.

use rusqlite::{Connection, OptionalExtension, params};

pub const META_DIMENSION: &str = "embedding_dimension";
pub const META_MODEL: &str = "embedding_model";

/// Whether the vector channel runs, and for which model (`/health`,
/// `mnemo stats`): `{"state": "enabled", "model", "dimension"}` or
/// `{"state": "disabled", "reason"}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum VectorState {
    /// Vector search runs.
    Enabled {
        /// The embedding model the database is locked to.
        model: String,
        /// Its vectors' dimension.
        dimension: u32,
    },
    /// Vector search is off; recall answers from the other channels.
    Disabled {
        /// Why (e.g. the embedder differs from the one the database was built with).
        reason: String,
    },
}

impl VectorState {
    pub fn enabled(&self) -> bool {
        matches!(self, Self::Enabled { .. })
    }
}

fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM metadata WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .optional()
}

fn create_tables(conn: &Connection, dimension: u32) -> rusqlite::Result<()> {
    for table in ["vec_memories", "vec_episodes"] {
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0(\
                 namespace text partition key, \
                 embedding float[{dimension}] distance_metric=cosine)"
        ))?;
    }
    Ok(())
}

/// Once after the migration that made the waiting list (which lists every
/// active row): the rows that have a vector leave it.
fn settle_pending(conn: &Connection) -> rusqlite::Result<()> {
    if meta(conn, "vector_pending_unchecked")?.is_none() {
        return Ok(());
    }
    conn.execute_batch(
        "DELETE FROM vector_pending WHERE target = 'memories' AND row IN (SELECT rowid FROM vec_memories);
         DELETE FROM vector_pending WHERE target = 'episodes' AND row IN (SELECT rowid FROM vec_episodes);
         DELETE FROM metadata WHERE key = 'vector_pending_unchecked';",
    )
}

/// Locks the database to `model`/`dimension` on first use, or checks the lock.
pub fn ensure(conn: &Connection, model: &str, dimension: u32) -> rusqlite::Result<VectorState> {
    match (meta(conn, META_DIMENSION)?, meta(conn, META_MODEL)?) {
        (None, _) => {
            reset(conn, model, dimension)?;
            Ok(VectorState::Enabled {
                model: model.into(),
                dimension,
            })
        }
        (Some(d), m) => {
            let state = verdict(&d, &m.unwrap_or_default(), model, dimension);
            if state.enabled() {
                create_tables(conn, dimension)?;
                settle_pending(conn)?;
            }
            Ok(state)
        }
    }
}

/// Whether a database locked to (`locked_dimension`, `locked_model`) takes
/// vectors of this embedder (both backends' embedding lock).
pub fn verdict(
    locked_dimension: &str,
    locked_model: &str,
    model: &str,
    dimension: u32,
) -> VectorState {
    if locked_dimension != dimension.to_string() {
        VectorState::Disabled {
            reason: format!(
                "embedding dimension {dimension} does not match the database ({locked_dimension}); run `mnemo reindex --embeddings`"
            ),
        }
    } else if locked_model != model {
        VectorState::Disabled {
            reason: format!(
                "embedding model `{model}` differs from the one the database was built with (`{locked_model}`); run `mnemo reindex --embeddings`"
            ),
        }
    } else {
        VectorState::Enabled {
            model: model.into(),
            dimension,
        }
    }
}

/// Drops every stored vector and locks the database to a new embedder.
pub fn reset(conn: &Connection, model: &str, dimension: u32) -> rusqlite::Result<()> {
    conn.execute_batch("DROP TABLE IF EXISTS vec_memories; DROP TABLE IF EXISTS vec_episodes;")?;
    create_tables(conn, dimension)?;
    // Every active row waits for a vector again.
    conn.execute_batch(
        "DELETE FROM vector_pending;
         INSERT INTO vector_pending SELECT 'memories', rowid FROM memories WHERE valid_until IS NULL;
         INSERT INTO vector_pending SELECT 'episodes', rowid FROM episodes WHERE valid_until IS NULL;
         DELETE FROM metadata WHERE key = 'vector_pending_unchecked';",
    )?;
    conn.execute(
        "INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![META_DIMENSION, dimension.to_string()],
    )?;
    conn.execute(
        "INSERT INTO metadata(key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![META_MODEL, model],
    )?;
    Ok(())
}
