//! Versioned migrations of the Postgres schema, tracked in `mnemo_schema`.
//! A released migration is never edited; a change is a new entry at the end.
//! They run under an advisory lock, so servers starting together on one
//! database migrate it once.
//!
//! The tables mirror the SQLite store's (`storage/migrations.rs`) at its
//! current version, with Postgres's own machinery for the indexes:
//! - full text: a `tsvector` per row (`fts`, and for a turn `fts_context`,
//!   the turn before it in its session) under GIN, in the `mnemo` text
//!   search configuration (Snowball English stems, no stop words: FTS5's
//!   `porter unicode61` keeps every word too); the host hands it the text
//!   the core segments (`index_text`, CJK) with diacritics folded, as FTS5's
//!   `remove_diacritics 2` does. `fts_len`, `fts_tf` (each lexeme's count), `fts_df` and `fts_totals` keep what BM25
//!   needs (document length, row and token counts) without a scan;
//! - vectors: pgvector `vector(d)` tables under an HNSW cosine index,
//!   created when the embedder is locked (`vectors.rs`).

use postgres::Client;

/// Key of the advisory lock migrations run under.
const MIGRATION_LOCK: i64 = 0x6d6e_656d_6f01;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: everything the SQLite store keeps at its version 11.
    r#"
CREATE EXTENSION IF NOT EXISTS vector;

DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'mnemo_stem') THEN
        CREATE TEXT SEARCH DICTIONARY mnemo_stem (TEMPLATE = snowball, Language = english);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'mnemo') THEN
        CREATE TEXT SEARCH CONFIGURATION mnemo (COPY = simple);
        ALTER TEXT SEARCH CONFIGURATION mnemo
            ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword,
                              hword_asciipart, hword_part, hword_numpart
            WITH mnemo_stem;
    END IF;
END $$;

CREATE TABLE memories (
    seq              BIGSERIAL UNIQUE,
    id               TEXT PRIMARY KEY,
    namespace        TEXT NOT NULL,
    content          TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    kind             TEXT NOT NULL,
    layer            TEXT NOT NULL,
    importance       REAL NOT NULL,
    confidence       REAL NOT NULL,
    decay_rate       REAL NOT NULL,
    access_count     BIGINT NOT NULL DEFAULT 0,
    repetition_count BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    modified_at      BIGINT NOT NULL,
    last_accessed    BIGINT,
    event_time       BIGINT NOT NULL,
    created_epoch    BIGINT NOT NULL DEFAULT 0,
    valid_until      BIGINT,
    invalid_reason   TEXT,
    session_id       TEXT,
    source           TEXT,
    source_role      TEXT,
    tags             JSONB NOT NULL DEFAULT '[]',
    attributes       TEXT NOT NULL DEFAULT '{}',
    source_ids       TEXT NOT NULL DEFAULT '[]',
    supersedes       TEXT,
    superseded_by    TEXT,
    fts              TSVECTOR NOT NULL,
    fts_len          INTEGER NOT NULL DEFAULT 0,
    fts_tf           JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX idx_memories_ns_state ON memories(namespace, valid_until, layer);
CREATE INDEX idx_memories_hash ON memories(namespace, content_hash);
CREATE INDEX idx_memories_created ON memories(namespace, created_at, id);
CREATE INDEX idx_memories_created_all ON memories(created_at, id);
CREATE INDEX idx_memories_layer_modified ON memories(namespace, layer, modified_at);
CREATE INDEX idx_memories_layer_importance ON memories(namespace, layer, importance);
CREATE INDEX idx_memories_fts ON memories USING GIN (fts);
CREATE INDEX idx_memories_tags ON memories USING GIN (tags);

CREATE TABLE episodes (
    seq            BIGSERIAL UNIQUE,
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    source_role    TEXT NOT NULL,
    content        TEXT NOT NULL,
    event_time     BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    valid_until    BIGINT,
    invalid_reason TEXT,
    attributes     TEXT NOT NULL DEFAULT '{}',
    fts            TSVECTOR NOT NULL,
    fts_context    TSVECTOR NOT NULL,
    fts_len        INTEGER NOT NULL DEFAULT 0,
    fts_tf         JSONB NOT NULL DEFAULT '{}',
    fts_context_tf JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX idx_episodes_session ON episodes(namespace, session_id, event_time, seq);
CREATE INDEX idx_episodes_fts ON episodes USING GIN (fts);
CREATE INDEX idx_episodes_fts_context ON episodes USING GIN (fts_context);

-- BM25's collection figures per index (rows and tokens) and each lexeme's
-- document frequency (rows holding it, in their text or, for a turn, its
-- context: what FTS5 counts in a term's doclist). The row triggers only
-- append signed changes to the `_delta` tables — updating one counter row
-- per write would make a large transaction (an import) quadratic, each
-- update walking the versions the earlier ones left — and
-- `mnemo_fold_counts()`, run in the background, adds them into the folded
-- tables. A reader sums both.
CREATE TABLE fts_totals (
    target TEXT PRIMARY KEY,
    rows   BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);
INSERT INTO fts_totals VALUES ('memories', 0, 0), ('episodes', 0, 0);
CREATE TABLE fts_totals_delta (
    target TEXT NOT NULL,
    rows   BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);
CREATE INDEX fts_totals_delta_target ON fts_totals_delta(target);
CREATE TABLE fts_df (
    target TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    rows   BIGINT NOT NULL,
    PRIMARY KEY (target, lexeme)
);
CREATE TABLE fts_df_delta (
    target TEXT NOT NULL,
    lexeme TEXT NOT NULL,
    rows   BIGINT NOT NULL
);
CREATE INDEX fts_df_delta_lexeme ON fts_df_delta(target, lexeme);

CREATE FUNCTION mnemo_fold_counts() RETURNS BIGINT LANGUAGE plpgsql AS $f$
DECLARE
    n BIGINT;
BEGIN
    WITH gone AS (DELETE FROM fts_df_delta RETURNING target, lexeme, rows),
         agg AS (SELECT target, lexeme, SUM(rows) AS rows FROM gone GROUP BY target, lexeme)
    INSERT INTO fts_df SELECT target, lexeme, rows FROM agg ORDER BY target, lexeme
        ON CONFLICT (target, lexeme) DO UPDATE SET rows = fts_df.rows + excluded.rows;
    GET DIAGNOSTICS n = ROW_COUNT;
    WITH gone AS (DELETE FROM fts_totals_delta RETURNING target, rows, tokens),
         agg AS (SELECT target, SUM(rows) AS rows, SUM(tokens) AS tokens FROM gone GROUP BY target)
    UPDATE fts_totals t SET rows = t.rows + agg.rows, tokens = t.tokens + agg.tokens
        FROM agg WHERE t.target = agg.target;
    RETURN n;
END $f$;

-- One term's BM25 summand (FTS5's formula: k1 = 1.2, `search.rs`'s
-- BM25_K1, so k1 + 1 = 2.2), given its frequency
-- in the row, its idf and the row's length norm k1 · (1 − b + b · D / avgdl).
CREATE FUNCTION mnemo_bm25(tf FLOAT8, idf FLOAT8, norm FLOAT8) RETURNS FLOAT8 LANGUAGE sql IMMUTABLE AS
    $f$ SELECT CASE WHEN tf > 0 THEN idf * tf * 2.2 / (tf + norm) ELSE 0 END $f$;

CREATE FUNCTION mnemo_tokens(v TSVECTOR) RETURNS INTEGER LANGUAGE sql IMMUTABLE AS
    $f$ SELECT COALESCE(SUM(COALESCE(cardinality(positions), 1)), 0)::INTEGER FROM unnest(v) $f$;

-- Each lexeme's count in a vector, for BM25's term frequency: one lookup
-- per query term instead of a walk of the vector.
CREATE FUNCTION mnemo_tf(v TSVECTOR) RETURNS JSONB LANGUAGE sql IMMUTABLE AS
    $f$ SELECT COALESCE(jsonb_object_agg(lexeme, COALESCE(cardinality(positions), 1)), '{}') FROM unnest(v) $f$;

CREATE FUNCTION mnemo_fts_len() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    NEW.fts_tf := mnemo_tf(NEW.fts);
    IF TG_TABLE_NAME = 'episodes' THEN
        NEW.fts_context_tf := mnemo_tf(NEW.fts_context);
        NEW.fts_len := mnemo_tokens(NEW.fts) + mnemo_tokens(NEW.fts_context);
    ELSE
        NEW.fts_len := mnemo_tokens(NEW.fts);
    END IF;
    RETURN NEW;
END $f$;

-- The distinct lexemes of two vectors.
CREATE FUNCTION mnemo_lexemes(a TSVECTOR, b TSVECTOR) RETURNS TEXT[] LANGUAGE sql IMMUTABLE AS
    $f$ SELECT COALESCE(array_agg(l ORDER BY l), '{}') FROM
        (SELECT lexeme AS l FROM unnest(a) UNION SELECT lexeme FROM unnest(b)) s $f$;

CREATE FUNCTION mnemo_fts_totals() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
    old_l TEXT[] := '{}';
    new_l TEXT[] := '{}';
BEGIN
    IF TG_TABLE_NAME = 'episodes' THEN
        IF TG_OP <> 'INSERT' THEN old_l := mnemo_lexemes(OLD.fts, OLD.fts_context); END IF;
        IF TG_OP <> 'DELETE' THEN new_l := mnemo_lexemes(NEW.fts, NEW.fts_context); END IF;
    ELSE
        IF TG_OP <> 'INSERT' THEN old_l := mnemo_lexemes(OLD.fts, ''::TSVECTOR); END IF;
        IF TG_OP <> 'DELETE' THEN new_l := mnemo_lexemes(NEW.fts, ''::TSVECTOR); END IF;
    END IF;
    IF old_l IS DISTINCT FROM new_l THEN
        INSERT INTO fts_df_delta
            SELECT TG_TABLE_NAME, l, 1 FROM unnest(new_l) l WHERE NOT (l = ANY(old_l))
            UNION ALL
            SELECT TG_TABLE_NAME, l, -1 FROM unnest(old_l) l WHERE NOT (l = ANY(new_l));
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO fts_totals_delta VALUES (TG_TABLE_NAME, 1, NEW.fts_len);
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO fts_totals_delta VALUES (TG_TABLE_NAME, -1, -OLD.fts_len);
    ELSIF NEW.fts_len IS DISTINCT FROM OLD.fts_len THEN
        INSERT INTO fts_totals_delta VALUES (TG_TABLE_NAME, 0, NEW.fts_len - OLD.fts_len);
    END IF;
    RETURN NULL;
END $f$;

CREATE TRIGGER memories_fts_len BEFORE INSERT OR UPDATE OF fts ON memories
    FOR EACH ROW EXECUTE FUNCTION mnemo_fts_len();
CREATE TRIGGER episodes_fts_len BEFORE INSERT OR UPDATE OF fts, fts_context ON episodes
    FOR EACH ROW EXECUTE FUNCTION mnemo_fts_len();
CREATE TRIGGER memories_fts_totals AFTER INSERT OR UPDATE OF fts OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION mnemo_fts_totals();
CREATE TRIGGER episodes_fts_totals AFTER INSERT OR UPDATE OF fts, fts_context OR DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION mnemo_fts_totals();

CREATE TABLE sessions (
    namespace          TEXT NOT NULL,
    id                 TEXT NOT NULL,
    first_seen_at      BIGINT NOT NULL,
    last_seen_at       BIGINT NOT NULL,
    turn_count         BIGINT NOT NULL DEFAULT 0,
    consolidated_at    BIGINT,
    consolidated_turns BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE entities (
    seq            BIGSERIAL UNIQUE,
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    name_lower     TEXT NOT NULL,
    entity_type    TEXT NOT NULL,
    aliases        TEXT NOT NULL DEFAULT '[]',
    summary        TEXT,
    mention_count  BIGINT NOT NULL DEFAULT 1,
    protected      BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX idx_entities_name ON entities(namespace, name_lower, entity_type);
CREATE TABLE entity_aliases (
    entity_id   TEXT NOT NULL,
    alias_lower TEXT NOT NULL,
    PRIMARY KEY (alias_lower, entity_id)
);
CREATE TABLE memory_entities (
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX idx_me_entity ON memory_entities(entity_id);
CREATE TABLE episode_entities (
    episode_id TEXT NOT NULL,
    entity_id  TEXT NOT NULL,
    PRIMARY KEY (episode_id, entity_id)
);
CREATE INDEX idx_ee_entity ON episode_entities(entity_id);

CREATE TABLE facts (
    seq           BIGSERIAL UNIQUE,
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    predicate     TEXT NOT NULL,
    object        TEXT NOT NULL,
    confidence    REAL NOT NULL,
    valid_from    BIGINT NOT NULL,
    valid_until   BIGINT,
    superseded_by TEXT,
    memory_id     TEXT
);
CREATE INDEX idx_facts_subject ON facts(namespace, lower(subject));
CREATE INDEX idx_facts_object ON facts(namespace, lower(object));

CREATE TABLE metadata (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- The changes that matter to topic trees (a memory stored, its text, layer
-- or validity changed), as in SQLite's migration 7 — counted by a sequence,
-- which no transaction waits on (a rolled-back change still counts: one
-- rebuild more).
CREATE SEQUENCE memories_changed;
CREATE FUNCTION mnemo_memories_changed() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
       OR NEW.layer IS DISTINCT FROM OLD.layer OR NEW.valid_until IS DISTINCT FROM OLD.valid_until THEN
        PERFORM nextval('memories_changed');
    END IF;
    RETURN NULL;
END $f$;
CREATE TRIGGER memories_changed AFTER INSERT OR UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION mnemo_memories_changed();

CREATE TABLE llm_usage (
    id            BIGSERIAL PRIMARY KEY,
    at            BIGINT NOT NULL,
    component     TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    duration_ms   BIGINT NOT NULL DEFAULT 0,
    outcome       TEXT NOT NULL
);

CREATE TABLE audit_log (
    id        BIGSERIAL PRIMARY KEY,
    at        BIGINT NOT NULL,
    namespace TEXT NOT NULL,
    action    TEXT NOT NULL,
    target_id TEXT NOT NULL,
    detail    TEXT NOT NULL
);
CREATE INDEX idx_audit_target ON audit_log(target_id);

CREATE TABLE memory_versions (
    memory_id   TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    namespace   TEXT NOT NULL,
    replaced_at BIGINT NOT NULL,
    action      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    memory      TEXT NOT NULL,
    PRIMARY KEY (memory_id, seq)
);
CREATE INDEX memory_versions_namespace ON memory_versions(namespace, memory_id);

-- The rows waiting for a vector (the background embedding's next batch).
CREATE TABLE vector_pending (
    target TEXT NOT NULL,
    row    BIGINT NOT NULL,
    PRIMARY KEY (target, row)
);
CREATE FUNCTION mnemo_vector_pending() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    INSERT INTO vector_pending VALUES (TG_TABLE_NAME, NEW.seq) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $f$;
CREATE TRIGGER memories_vector_pending AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION mnemo_vector_pending();
CREATE TRIGGER episodes_vector_pending AFTER INSERT ON episodes
    FOR EACH ROW EXECUTE FUNCTION mnemo_vector_pending();
"#,
    // 2: indexes for the reads the 100k load found scanning the table
    // (`EXPLAIN ANALYZE` at 100,000 memories, docs/benchmarks.md,
    // "Postgres"): the newest-changed active memories (a list by `modified_at`
    // over several layers: 71 ms → 0.5 ms), `stats`' per-layer/kind counts
    // as an index-only scan (45 → 13 ms), and tags by prefix — each tag's
    // heads up to every `:` in a GIN index, so `tag_counts("trigger:")`
    // reads only the tagged rows (37 → 0.04 ms).
    r#"
CREATE FUNCTION mnemo_tag_heads(tags JSONB) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
    SELECT COALESCE(array_agg(DISTINCT left(t, i)), '{}')
    FROM jsonb_array_elements_text(tags) t, generate_series(1, length(t)) i
    WHERE substr(t, i, 1) = ':'
$f$;
CREATE INDEX idx_memories_tag_heads ON memories
    USING GIN (mnemo_tag_heads(tags)) WHERE valid_until IS NULL;
CREATE INDEX idx_memories_active_modified ON memories(namespace, modified_at DESC, id DESC)
    WHERE valid_until IS NULL;
CREATE INDEX idx_memories_active_kinds ON memories(namespace, layer, kind, created_at)
    WHERE valid_until IS NULL;
"#,
    // 3: the cycle's two reads the 1M load found slow (`EXPLAIN ANALYZE`
    // at 1,000,000 memories): a layer's newest-changed, read once per
    // layer by `list_memories` (the Buffer and Core walked every Working
    // row's place in migration 2's index: 573 ms → 1.9 ms), and a layer's
    // memories from one source, the session notes (a table scan: 339 ms →
    // 0.01 ms).
    r#"
CREATE INDEX idx_memories_active_layer_modified
    ON memories(namespace, layer, modified_at DESC, id DESC) WHERE valid_until IS NULL;
CREATE INDEX idx_memories_active_source
    ON memories(namespace, layer, source, modified_at DESC, id DESC)
    WHERE valid_until IS NULL AND source IS NOT NULL;
"#,
    // 4: each turn's place in its session (`session_turn` in its
    // attributes), for recall's reply term (`core/src/read/dialogue.rs`):
    // ingest stamps new turns; the turns stored before get theirs here, in
    // dialogue order (SQLite's migration 12). A place the caller set is kept.
    r#"
UPDATE episodes e
SET attributes = (e.attributes::jsonb || jsonb_build_object('session_turn', t.n))::text
FROM (
    SELECT id, row_number() OVER (PARTITION BY namespace, session_id ORDER BY event_time, seq) AS n
    FROM episodes
) t
WHERE e.id = t.id
  AND jsonb_typeof(e.attributes::jsonb) = 'object'
  AND NOT (e.attributes::jsonb ? 'session_turn');
"#,
    // 5: the log each server's derived full-text index tails (`text.rs`):
    // one entry per row whose lexemes or namespace changed, under its
    // namespace (a move logs both), written in the changing transaction
    // with that transaction's id, which says when the entry may still
    // become visible behind later ones.
    r#"
CREATE TABLE text_changes (
    seq       BIGSERIAL PRIMARY KEY,
    target    TEXT NOT NULL,
    namespace TEXT NOT NULL,
    row_seq   BIGINT NOT NULL,
    xid       XID8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX text_changes_after ON text_changes(target, namespace, seq);
CREATE INDEX text_changes_xid ON text_changes(target, namespace, xid);
-- The background catch-up asks which partitions have entries, over every namespace.
CREATE INDEX text_changes_xid_any ON text_changes(xid);
CREATE FUNCTION mnemo_text_changed() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO text_changes(target, namespace, row_seq)
            VALUES (TG_TABLE_NAME, OLD.namespace, OLD.seq);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.namespace IS DISTINCT FROM OLD.namespace) THEN
        INSERT INTO text_changes(target, namespace, row_seq)
            VALUES (TG_TABLE_NAME, NEW.namespace, NEW.seq);
    END IF;
    RETURN NULL;
END $f$;
CREATE TRIGGER memories_text_written AFTER INSERT OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION mnemo_text_changed();
CREATE TRIGGER memories_text_updated AFTER UPDATE ON memories
    FOR EACH ROW WHEN (NEW.fts IS DISTINCT FROM OLD.fts OR NEW.namespace IS DISTINCT FROM OLD.namespace
                       OR NEW.fts_len IS DISTINCT FROM OLD.fts_len)
    EXECUTE FUNCTION mnemo_text_changed();
CREATE TRIGGER episodes_text_written AFTER INSERT OR DELETE ON episodes
    FOR EACH ROW EXECUTE FUNCTION mnemo_text_changed();
CREATE TRIGGER episodes_text_updated AFTER UPDATE ON episodes
    FOR EACH ROW WHEN (NEW.fts IS DISTINCT FROM OLD.fts OR NEW.fts_context IS DISTINCT FROM OLD.fts_context
                       OR NEW.namespace IS DISTINCT FROM OLD.namespace OR NEW.fts_len IS DISTINCT FROM OLD.fts_len)
    EXECUTE FUNCTION mnemo_text_changed();
"#,
];

pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}

/// Brings the schema up to date under the migration lock; refuses a
/// database from a newer mnemo.
pub fn migrate(client: &mut Client) -> anyhow::Result<()> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS mnemo_schema (version INTEGER NOT NULL)")?;
    let version: i32 = match tx.query_opt("SELECT version FROM mnemo_schema", &[])? {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO mnemo_schema VALUES (0)", &[])?;
            0
        }
    };
    let version = u32::try_from(version).unwrap_or(0);
    if version > current_version() {
        anyhow::bail!(
            "the database has schema version {version}, newer than this mnemo ({}); upgrade mnemo",
            current_version()
        );
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(sql)?;
        tx.execute("UPDATE mnemo_schema SET version = $1", &[&(i as i32 + 1)])?;
    }
    tx.commit()?;
    Ok(())
}
