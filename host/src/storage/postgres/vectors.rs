//! Vectors in Postgres: pgvector tables (`vec_memories`, `vec_episodes`)
//! under HNSW cosine indexes over the large namespaces' sealed segments
//! and a covering index over the others' rows (`graph.rs` says which are
//! which, `segments.rs` how the segments are indexed), the
//! embedding lock (the model and dimension the store was built with, in
//! `metadata` as in the SQLite store), and the list of rows waiting for a
//! vector.

use mnemo_core::CoreError;
use mnemo_core::model::Target;
use pgvector::Vector;
use postgres::GenericClient;

use super::graph::TABLES;
use super::knn::EXACT_MAX_ROWS;
use super::sql::table;
use super::{PgStore, R, pg};
use crate::storage::vectors::{META_DIMENSION, META_MODEL, VectorState, verdict};

/// Postgres's largest btree entry (btree version 4: about a third of a page).
const BTREE_MAX_TUPLE: u32 = 2704;
/// A covering entry's bytes beside the vector's 4 a dimension: the tuple
/// header, a namespace (at most 64 bytes, `NAMESPACE_PATTERN`), the row
/// and the vector's header, with their alignment, rounded up.
const COVER_OVERHEAD: u32 = 128;

/// Whether a namespace's vectors fit in its index entries, so its exact
/// search reads them from the index, in order, and not from heap pages
/// shared with every other tenant: 6,407 vectors of a 100,000-row store
/// sat on 3,666 of its pages (19 ms a search), and on 277 index pages
/// (6 ms). Up to 644 dimensions (MiniLM's 384 fit; mpnet's 768 do not:
/// their search reads the heap).
fn covered(dimension: u32) -> bool {
    4 * dimension + COVER_OVERHEAD <= BTREE_MAX_TUPLE
}

/// The vector tables, their indexes, the list of namespaces searched
/// through the HNSW graph (`vec_graph`) and each table's segments
/// (`vec_segments`, `segments.rs`). Only the rows of listed namespaces are
/// in a segment (`seg`, null for the others): a namespace under
/// `EXACT_MAX_ROWS` vectors is searched exactly, from the covering index of
/// the rows outside every segment. No write pays the graph's insert (4.7 ms
/// against 0.04 ms without it in a 100,000-vector store): a listed
/// namespace's vector is written into the open segment, which no index
/// holds until the backfill leader seals it.
fn create_tables(db: &mut impl GenericClient, dimension: u32) -> Result<(), postgres::Error> {
    db.batch_execute(
        "CREATE TABLE IF NOT EXISTS vec_graph (\
             target TEXT NOT NULL, namespace TEXT NOT NULL, PRIMARY KEY (target, namespace)); \
         CREATE TABLE IF NOT EXISTS vec_segments (\
             target TEXT NOT NULL, seg INTEGER NOT NULL, rows BIGINT, waits TEXT[], PRIMARY KEY (target, seg))",
    )?;
    // `waits` (`tail.rs`) came after the segments: asked first, as `seg`.
    let waits: bool = db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('vec_segments') \
             AND attname = 'waits' AND NOT attisdropped)",
            &[],
        )?
        .get(0);
    if !waits {
        db.batch_execute("ALTER TABLE vec_segments ADD COLUMN waits TEXT[]")?;
    }
    for t in TABLES {
        db.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS vec_{t} (\
                 row BIGINT PRIMARY KEY, \
                 namespace TEXT NOT NULL, \
                 embedding vector({dimension}) NOT NULL, \
                 seg INTEGER)"
        ))?;
        // Asked first: an ALTER TABLE, even one with nothing to do, would
        // wait for every statement on the table (each server's start).
        if !has_column(db, t, "seg")? {
            db.batch_execute(&format!("ALTER TABLE vec_{t} ADD COLUMN seg INTEGER"))?;
        }
        let whole_graph: bool = db
            .query_one(
                &format!("SELECT to_regclass('vec_{t}_hnsw') IS NOT NULL"),
                &[],
            )?
            .get(0);
        if has_column(db, t, "graph")? {
            upgrade_flagged(db, t)?;
        } else if whole_graph {
            upgrade(db, t)?;
        }
        // The open segment, numbered past every sealed one.
        db.execute(
            "INSERT INTO vec_segments (target, seg, rows) \
             SELECT $1, COALESCE(MAX(seg), 0) + 1, NULL FROM vec_segments WHERE target = $1 \
             HAVING COUNT(*) FILTER (WHERE rows IS NULL) = 0",
            &[&t],
        )?;
        let namespace_index = if covered(dimension) {
            format!(
                "CREATE INDEX IF NOT EXISTS vec_{t}_loose ON vec_{t} (namespace) INCLUDE (row, embedding) WHERE seg IS NULL"
            )
        } else {
            format!(
                "CREATE INDEX IF NOT EXISTS vec_{t}_loose ON vec_{t} (namespace) WHERE seg IS NULL"
            )
        };
        // The segments' rows by number: the open segment's count, and the
        // rows a search reads exactly because no index holds them yet.
        let seg_index = format!(
            "CREATE INDEX IF NOT EXISTS vec_{t}_seg ON vec_{t} (seg, namespace) WHERE seg IS NOT NULL"
        );
        // Each asked first: a CREATE INDEX takes its table's lock before it
        // finds the index there, and would wait out a segment's concurrent
        // build (`segments.rs`) at every server's start.
        for (name, create) in [("loose", namespace_index), ("seg", seg_index)] {
            let exists: bool = db
                .query_one(
                    &format!("SELECT to_regclass('vec_{t}_{name}') IS NOT NULL"),
                    &[],
                )?
                .get(0);
            if !exists {
                db.batch_execute(&create)?;
            }
        }
    }
    Ok(())
}

fn has_column(db: &mut impl GenericClient, t: &str, column: &str) -> Result<bool, postgres::Error> {
    Ok(db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) \
             AND attname = $2 AND NOT attisdropped)",
            &[&format!("vec_{t}"), &column],
        )?
        .get(0))
}

/// A store from before the graph held only large namespaces: every vector
/// was in one HNSW index (`vec_{t}_hnsw`). The namespaces of
/// `EXACT_MAX_ROWS` vectors or more are listed and their rows put in
/// segment 1, sealed; the backfill leader builds its index without
/// blocking the table (`graph.rs`). The others' rows leave the graph.
fn upgrade(db: &mut impl GenericClient, t: &str) -> Result<(), postgres::Error> {
    db.batch_execute(&format!(
        "DROP INDEX vec_{t}_hnsw; DROP INDEX IF EXISTS vec_{t}_namespace_cover; DROP INDEX IF EXISTS vec_{t}_namespace;"
    ))?;
    db.execute(
        &format!(
            "INSERT INTO vec_graph SELECT $1, namespace FROM vec_{t} GROUP BY namespace HAVING COUNT(*) >= $2 \
             ON CONFLICT DO NOTHING"
        ),
        &[&t, &EXACT_MAX_ROWS],
    )?;
    let moved = db.execute(
        &format!(
            "UPDATE vec_{t} v SET seg = 1 FROM vec_graph g WHERE g.target = $1 AND g.namespace = v.namespace"
        ),
        &[&t],
    )?;
    seal_first(db, t, moved)
}

/// A store whose graph was one index over the rows flagged `graph`: those
/// rows become segment 1, sealed, and the flag goes (with the indexes
/// over it); the backfill leader builds the segment's index.
fn upgrade_flagged(db: &mut impl GenericClient, t: &str) -> Result<(), postgres::Error> {
    // First the graph's index, or each row's update would insert into it.
    db.batch_execute(&format!(
        "DROP INDEX IF EXISTS vec_{t}_graph; DROP INDEX IF EXISTS vec_{t}_loose"
    ))?;
    let moved = db.execute(&format!("UPDATE vec_{t} SET seg = 1 WHERE graph"), &[])?;
    db.batch_execute(&format!("ALTER TABLE vec_{t} DROP COLUMN graph"))?;
    seal_first(db, t, moved)
}

/// Records segment 1 of `rows` rows as sealed (none when no row moved).
fn seal_first(db: &mut impl GenericClient, t: &str, rows: u64) -> Result<(), postgres::Error> {
    if rows > 0 {
        db.execute(
            "INSERT INTO vec_segments (target, seg, rows) VALUES ($1, 1, $2) ON CONFLICT DO NOTHING",
            &[&t, &(rows as i64)],
        )?;
    }
    Ok(())
}

fn meta(db: &mut impl GenericClient, key: &str) -> Result<Option<String>, postgres::Error> {
    Ok(db
        .query_opt("SELECT value FROM metadata WHERE key = $1", &[&key])?
        .map(|r| r.get(0)))
}

fn reset(db: &mut impl GenericClient, model: &str, dimension: u32) -> Result<(), postgres::Error> {
    db.batch_execute(
        "DROP TABLE IF EXISTS vec_memories; DROP TABLE IF EXISTS vec_episodes; DROP TABLE IF EXISTS vec_graph; DROP TABLE IF EXISTS vec_segments; \
         DELETE FROM vector_pending; \
         INSERT INTO vector_pending SELECT 'memories', seq FROM memories WHERE valid_until IS NULL; \
         INSERT INTO vector_pending SELECT 'episodes', seq FROM episodes WHERE valid_until IS NULL;",
    )?;
    create_tables(db, dimension)?;
    for (key, value) in [
        (META_DIMENSION, dimension.to_string()),
        (META_MODEL, model.into()),
    ] {
        db.execute(
            "INSERT INTO metadata(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&key, &value],
        )?;
    }
    Ok(())
}

impl PgStore {
    /// Checks (or sets, on first use) the embedding lock for this embedder,
    /// in one transaction under the lock's row, so servers starting
    /// together agree.
    pub fn lock_embedder(&self, model: &str, dimension: u32) -> anyhow::Result<VectorState> {
        let state = {
            let mut db = self.db();
            let mut tx = db.transaction()?;
            tx.execute("LOCK TABLE metadata IN SHARE ROW EXCLUSIVE MODE", &[])?;
            let state = match (meta(&mut tx, META_DIMENSION)?, meta(&mut tx, META_MODEL)?) {
                (None, _) => {
                    reset(&mut tx, model, dimension)?;
                    VectorState::Enabled {
                        model: model.into(),
                        dimension,
                    }
                }
                (Some(d), m) => {
                    let state = verdict(&d, &m.unwrap_or_default(), model, dimension);
                    if state.enabled() {
                        create_tables(&mut tx, dimension)?;
                    }
                    state
                }
            };
            tx.commit()?;
            state
        };
        self.set_vector_state(state.clone());
        Ok(state)
    }

    /// Forgets every vector and re-locks to a new embedder (`mnemo reindex --embeddings`).
    pub fn reset_vectors(&self, model: &str, dimension: u32) -> anyhow::Result<()> {
        {
            let mut db = self.db();
            let mut tx = db.transaction()?;
            reset(&mut tx, model, dimension)?;
            tx.commit()?;
        }
        self.forget_listings();
        self.set_vector_state(VectorState::Enabled {
            model: model.into(),
            dimension,
        });
        Ok(())
    }

    fn vector_row(&self, target: Target, id: &str) -> R<Option<(i64, String)>> {
        let t = table(target);
        let row = pg(self.db().query_opt(
            &format!("SELECT seq, namespace FROM {t} WHERE id = $1"),
            &[&id],
        ))?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// Stores `v` for row `id`: in a listed namespace, into the open
    /// segment (read in the same statement), which no index holds yet, so
    /// the exact search finds it until the leader builds the segment's
    /// index; a vector written over one in a built segment moves too.
    pub fn put_vector(&self, target: Target, id: &str, v: &[f32]) -> R<()> {
        if self.absorbs() {
            return Ok(());
        }
        let VectorState::Enabled { dimension, .. } = self.vector_state() else {
            return Ok(());
        };
        if v.len() != dimension as usize {
            return Err(CoreError::Embedding(format!(
                "vector has {} dimensions; the database expects {dimension}",
                v.len()
            )));
        }
        let t = table(target);
        let Some((row, ns)) = self.vector_row(target, id)? else {
            return Err(CoreError::NotFound(format!("no row `{id}` in {t}")));
        };
        let mut db = self.db();
        pg(db.execute(
            &format!(
                "INSERT INTO vec_{t} (row, namespace, embedding, seg) VALUES ($1, $2, $3, \
                   (SELECT s.seg FROM vec_segments s WHERE s.target = $4 AND s.rows IS NULL \
                    AND EXISTS (SELECT 1 FROM vec_graph g WHERE g.target = $4 AND g.namespace = $2))) \
                 ON CONFLICT (row) DO UPDATE SET embedding = excluded.embedding, seg = excluded.seg"
            ),
            &[&row, &ns, &Vector::from(v.to_vec()), &t],
        ))?;
        pg(db.execute(
            "DELETE FROM vector_pending WHERE target = $1 AND row = $2",
            &[&t, &row],
        ))?;
        Ok(())
    }

    pub fn delete_vector(&self, target: Target, id: &str) -> R<()> {
        if self.absorbs() || !self.vectors_on() {
            return Ok(());
        }
        let t = table(target);
        let Some((row, _)) = self.vector_row(target, id)? else {
            return Ok(());
        };
        let mut db = self.db();
        pg(db.execute(&format!("DELETE FROM vec_{t} WHERE row = $1"), &[&row]))?;
        pg(db.execute(
            &format!(
                "INSERT INTO vector_pending SELECT $1, seq FROM {t} WHERE seq = $2 AND valid_until IS NULL \
                 ON CONFLICT DO NOTHING"
            ),
            &[&t, &row],
        ))?;
        Ok(())
    }

    pub fn get_vectors(&self, target: Target, ids: &[String]) -> R<Vec<(String, Vec<f32>)>> {
        if !self.vectors_on() || ids.is_empty() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let rows = pg(self.db().query(
            &format!("SELECT x.id, v.embedding FROM {t} x JOIN vec_{t} v ON v.row = x.seq WHERE x.id = ANY($1)"),
            &[&ids],
        ))?;
        let mut found: std::collections::HashMap<String, Vec<f32>> = rows
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, Vector>(1).to_vec()))
            .collect();
        // In the order asked, as the SQLite store answers.
        Ok(ids
            .iter()
            .filter_map(|id| found.remove(id).map(|v| (id.clone(), v)))
            .collect())
    }

    /// Active rows of `target` that have no vector yet, oldest first (from
    /// the waiting list: no scan of the store).
    pub fn missing_vectors(
        &self,
        target: Target,
        limit: u32,
    ) -> anyhow::Result<Vec<(String, String)>> {
        if !self.vectors_on() {
            return Ok(Vec::new());
        }
        let t = table(target);
        let rows = self.db().query(
            &format!(
                "SELECT x.id, x.content FROM vector_pending p JOIN {t} x ON x.seq = p.row \
                 WHERE p.target = $2 AND x.valid_until IS NULL ORDER BY p.row LIMIT $1"
            ),
            &[&i64::from(limit), &t],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Whether active row `id` still has text `text` and no vector.
    /// Whether row `id` still has text `text` and no vector; the row stays
    /// locked until the backfill's transaction ends, so an edit of it
    /// (which writes its own vector) waits instead of being overwritten by
    /// the old text's vector: the backfill holds no namespace lock.
    pub fn vector_still_missing(
        &self,
        target: Target,
        id: &str,
        text: &str,
    ) -> anyhow::Result<bool> {
        let t = table(target);
        let row = self.db().query_opt(
            &format!(
                "SELECT x.content FROM {t} x JOIN vector_pending p ON p.row = x.seq AND p.target = $2 \
                 WHERE x.id = $1 AND x.valid_until IS NULL FOR UPDATE OF x"
            ),
            &[&id, &t],
        )?;
        Ok(row.map(|r| r.get::<_, String>(0)).as_deref() == Some(text))
    }
}
