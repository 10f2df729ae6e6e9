//! Versioned schema migrations, tracked in `PRAGMA user_version`. A released
//! migration is never edited; a change is a new entry at the end.

use rusqlite::Connection;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: everything both seeds store.
    r#"
CREATE TABLE memories (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    namespace        TEXT NOT NULL,
    content          TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    kind             TEXT NOT NULL,
    layer            TEXT NOT NULL,
    importance       REAL NOT NULL,
    confidence       REAL NOT NULL,
    decay_rate       REAL NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    repetition_count INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    modified_at      INTEGER NOT NULL,
    last_accessed    INTEGER,
    event_time       INTEGER NOT NULL,
    created_epoch    INTEGER NOT NULL DEFAULT 0,
    valid_until      INTEGER,
    invalid_reason   TEXT,
    session_id       TEXT,
    source           TEXT,
    source_role      TEXT,
    tags             TEXT NOT NULL DEFAULT '[]',
    attributes       TEXT NOT NULL DEFAULT '{}',
    source_ids       TEXT NOT NULL DEFAULT '[]',
    supersedes       TEXT,
    superseded_by    TEXT
);
CREATE INDEX idx_memories_ns_state ON memories(namespace, valid_until, layer);
CREATE INDEX idx_memories_hash ON memories(namespace, content_hash);
CREATE INDEX idx_memories_created ON memories(namespace, created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags,
    content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;

CREATE TABLE episodes (
    rowid          INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    namespace      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    source_role    TEXT NOT NULL,
    content        TEXT NOT NULL,
    event_time     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    valid_until    INTEGER,
    invalid_reason TEXT,
    attributes     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX idx_episodes_session ON episodes(namespace, session_id, event_time);

CREATE VIRTUAL TABLE episodes_fts USING fts5(
    content,
    content='episodes', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;

CREATE TABLE sessions (
    namespace       TEXT NOT NULL,
    id              TEXT NOT NULL,
    first_seen_at   INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL,
    turn_count      INTEGER NOT NULL DEFAULT 0,
    consolidated_at INTEGER,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE entities (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    name_lower     TEXT NOT NULL,
    entity_type    TEXT NOT NULL,
    aliases        TEXT NOT NULL DEFAULT '[]',
    summary        TEXT,
    mention_count  INTEGER NOT NULL DEFAULT 1,
    protected      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_entities_name ON entities(namespace, name_lower, entity_type);
CREATE TABLE entity_aliases (
    entity_id   TEXT NOT NULL REFERENCES entities(id),
    alias_lower TEXT NOT NULL,
    PRIMARY KEY (alias_lower, entity_id)
);
CREATE TABLE memory_entities (
    memory_id TEXT NOT NULL REFERENCES memories(id),
    entity_id TEXT NOT NULL REFERENCES entities(id),
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX idx_me_entity ON memory_entities(entity_id);
CREATE TABLE episode_entities (
    episode_id TEXT NOT NULL REFERENCES episodes(id),
    entity_id  TEXT NOT NULL REFERENCES entities(id),
    PRIMARY KEY (episode_id, entity_id)
);
CREATE INDEX idx_ee_entity ON episode_entities(entity_id);

CREATE TABLE facts (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    predicate     TEXT NOT NULL,
    object        TEXT NOT NULL,
    confidence    REAL NOT NULL,
    valid_from    INTEGER NOT NULL,
    valid_until   INTEGER,
    superseded_by TEXT,
    memory_id     TEXT
);
CREATE INDEX idx_facts_subject ON facts(namespace, lower(subject));
CREATE INDEX idx_facts_object ON facts(namespace, lower(object));

CREATE TABLE metadata (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE llm_usage (
    id            INTEGER PRIMARY KEY,
    at            INTEGER NOT NULL,
    component     TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    outcome       TEXT NOT NULL
);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    action    TEXT NOT NULL,
    target_id TEXT NOT NULL,
    detail    TEXT NOT NULL
);
CREATE INDEX idx_audit_target ON audit_log(target_id);
"#,
    // 2: the full-text index sees CJK runs as the query does (segmented by
    // `mnemo_index_text`, the core's `text::index_text`); existing rows are
    // re-indexed.
    r#"
DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TRIGGER episodes_fts_insert;
DROP TRIGGER episodes_fts_delete;
DROP TRIGGER episodes_fts_update;
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, mnemo_index_text(new.content), new.tags);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, mnemo_index_text(old.content), old.tags);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, mnemo_index_text(old.content), old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, mnemo_index_text(new.content), new.tags);
END;
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, mnemo_index_text(new.content));
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, mnemo_index_text(old.content));
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, mnemo_index_text(old.content));
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, mnemo_index_text(new.content));
END;
INSERT INTO memories_fts(memories_fts) VALUES ('delete-all');
INSERT INTO memories_fts(rowid, content, tags) SELECT rowid, mnemo_index_text(content), tags FROM memories;
INSERT INTO episodes_fts(episodes_fts) VALUES ('delete-all');
INSERT INTO episodes_fts(rowid, content) SELECT rowid, mnemo_index_text(content) FROM episodes;
"#,
    // 3: a turn is indexed with the turn before it in its session, in a
    // second column (`context`) that recall weighs less than the turn's own
    // words: an answer is found by the question it answers. The index keeps
    // no copy of the text (contentless, deletable by rowid), so a delete
    // needs no recomputed context.
    r#"
DROP TRIGGER episodes_fts_insert;
DROP TRIGGER episodes_fts_delete;
DROP TRIGGER episodes_fts_update;
DROP TABLE episodes_fts;
CREATE VIRTUAL TABLE episodes_fts USING fts5(
    content, context,
    content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, content, context) VALUES (
        new.rowid,
        mnemo_index_text(new.content),
        mnemo_index_text(COALESCE((
            SELECT p.content FROM episodes p
            WHERE p.namespace = new.namespace AND p.session_id = new.session_id
              AND (p.event_time, p.rowid) < (new.event_time, new.rowid)
            ORDER BY p.event_time DESC, p.rowid DESC LIMIT 1), '')));
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    DELETE FROM episodes_fts WHERE rowid = old.rowid;
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
    DELETE FROM episodes_fts WHERE rowid = old.rowid;
    INSERT INTO episodes_fts(rowid, content, context) VALUES (
        new.rowid,
        mnemo_index_text(new.content),
        mnemo_index_text(COALESCE((
            SELECT p.content FROM episodes p
            WHERE p.namespace = new.namespace AND p.session_id = new.session_id
              AND (p.event_time, p.rowid) < (new.event_time, new.rowid)
            ORDER BY p.event_time DESC, p.rowid DESC LIMIT 1), '')));
END;
INSERT INTO episodes_fts(rowid, content, context)
    SELECT rowid, mnemo_index_text(content), mnemo_index_text(COALESCE(
        LAG(content) OVER (PARTITION BY namespace, session_id ORDER BY event_time, rowid), ''))
    FROM episodes;
"#,
    // 4: a per-session watermark: how many turns are consolidated, so turns
    // arriving after a consolidation are consolidated too, from there.
    // Sessions consolidated before it count all their turns as done.
    r#"
ALTER TABLE sessions ADD COLUMN consolidated_turns INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET consolidated_turns = turn_count WHERE consolidated_at IS NOT NULL;
"#,
    // 5: the history of memories: each state an edit, a merge or a revert
    // replaced, whole (the memory row as JSON), restorable.
    r#"
CREATE TABLE memory_versions (
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    replaced_at INTEGER NOT NULL,
    action TEXT NOT NULL,
    reason TEXT NOT NULL,
    memory TEXT NOT NULL,
    PRIMARY KEY (memory_id, seq)
) WITHOUT ROWID;
CREATE INDEX memory_versions_namespace ON memory_versions(namespace, memory_id);
"#,
    // 6: a counter of the changes that matter to the topic trees (a memory
    // stored, its text, layer or validity changed), so the server's
    // debounced rebuild can tell them from reads and touches cheaply.
    r#"
INSERT OR IGNORE INTO metadata(key, value) VALUES ('memories_changed', '0');
CREATE TRIGGER memories_changed_insert AFTER INSERT ON memories BEGIN
    UPDATE metadata SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memories_changed';
END;
CREATE TRIGGER memories_changed_update AFTER UPDATE OF content, layer, valid_until ON memories BEGIN
    UPDATE metadata SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memories_changed';
END;
"#,
    // 7: a row written back unchanged in its text and tags (the cycle's
    // importance decay writes every memory) no longer re-segments its FTS
    // entry, and moves the topic counter only when text, layer or validity
    // really changed (UPDATE OF fires on any SET that names the column).
    r#"
DROP TRIGGER memories_fts_update;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, mnemo_index_text(old.content), old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, mnemo_index_text(new.content), new.tags);
END;
DROP TRIGGER memories_changed_update;
CREATE TRIGGER memories_changed_update AFTER UPDATE OF content, layer, valid_until ON memories
WHEN old.content IS NOT new.content OR old.layer IS NOT new.layer OR old.valid_until IS NOT new.valid_until BEGIN
    UPDATE metadata SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memories_changed';
END;
"#,
    // 8: the vector writes since a persisted HNSW graph's snapshot, so a
    // graph loaded at start knows exactly which of its points are stale
    // and which vectors came after it (storage/ann_file.rs).
    r#"
CREATE TABLE vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    namespace TEXT NOT NULL,
    row INTEGER NOT NULL
);
CREATE INDEX vector_changes_partition ON vector_changes(target, namespace, seq);
"#,
    // 9: the rows waiting for a vector, kept by triggers and the vector
    // writes, so the background embedding finds its next batch without
    // scanning the whole store twice a second.
    r#"
CREATE TABLE vector_pending (
    target TEXT NOT NULL,
    row INTEGER NOT NULL,
    PRIMARY KEY (target, row)
) WITHOUT ROWID;
INSERT INTO vector_pending SELECT 'memories', rowid FROM memories WHERE valid_until IS NULL;
INSERT INTO vector_pending SELECT 'episodes', rowid FROM episodes WHERE valid_until IS NULL;
-- The rows that have a vector leave the list once the vector tables are
-- open (storage/vectors.rs), which they are not during migrations.
INSERT OR REPLACE INTO metadata(key, value) VALUES ('vector_pending_unchecked', '1');
CREATE TRIGGER memories_vector_pending AFTER INSERT ON memories BEGIN
    INSERT OR IGNORE INTO vector_pending VALUES ('memories', new.rowid);
END;
CREATE TRIGGER episodes_vector_pending AFTER INSERT ON episodes BEGIN
    INSERT OR IGNORE INTO vector_pending VALUES ('episodes', new.rowid);
END;
"#,
    // 10: keyset paging of memories newest first (`list-memories` with
    // `after-time`/`after-id`, the cycle's read of every active memory)
    // walks an index instead of sorting the store once per page.
    r#"
DROP INDEX IF EXISTS idx_memories_created;
CREATE INDEX idx_memories_created ON memories(namespace, created_at, id);
CREATE INDEX idx_memories_created_all ON memories(created_at, id);
"#,
    // 11: a consolidation cycle reads what it can act on, not the store
    // (`lifecycle/cycle.rs`): Working memories changed since the last
    // cycle, and those important enough for the gate.
    r#"
CREATE INDEX idx_memories_layer_modified ON memories(namespace, layer, modified_at);
CREATE INDEX idx_memories_layer_importance ON memories(namespace, layer, importance);
"#,
];

pub fn current_version() -> u32 {
    MIGRATIONS.len() as u32
}

/// Brings the schema up to date; refuses a database from a newer mnemo.
pub fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    let version: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > current_version() {
        anyhow::bail!(
            "the database has schema version {version}, newer than this mnemo ({}); upgrade mnemo",
            current_version()
        );
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as u32 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn version_4_puts_the_watermark_of_consolidated_sessions_past_their_turns() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::register_functions(&conn).unwrap();
        for m in &MIGRATIONS[..3] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (namespace, id, first_seen_at, last_seen_at, turn_count, consolidated_at) \
             VALUES ('default', 'done', 1, 2, 7, 3), ('default', 'open', 1, 2, 4, NULL);",
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let turns = |id: &str| -> u32 {
            conn.query_row(
                "SELECT consolidated_turns FROM sessions WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(
            turns("done"),
            7,
            "its turns were consolidated: none is read again"
        );
        assert_eq!(turns("open"), 0, "pending: every turn is still to do");
    }

    #[test]
    fn version_3_indexes_each_turn_with_the_one_before_it() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::register_functions(&conn).unwrap();
        for m in &MIGRATIONS[..2] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
        let turn = |conn: &Connection, id: &str, session: &str, at: i64, text: &str| {
            conn.execute(
                "INSERT INTO episodes (id, namespace, session_id, source_role, content, event_time, created_at) \
                 VALUES (?1, 'default', ?2, 'user', ?3, ?4, ?4)",
                rusqlite::params![id, session, text, at],
            )
            .unwrap();
        };
        turn(&conn, "e1", "s1", 1, "where did you go hiking");
        turn(&conn, "e2", "s1", 2, "up the mountain trail");
        turn(&conn, "e3", "s2", 3, "nothing to do with it");
        migrate(&mut conn).unwrap();
        let found = |conn: &Connection, q: &str| -> Vec<String> {
            let mut st = conn
                .prepare(
                    "SELECT e.id FROM episodes_fts f JOIN episodes e ON e.rowid = f.rowid \
                     WHERE episodes_fts MATCH ?1 ORDER BY e.id",
                )
                .unwrap();
            st.query_map([q], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        // Existing rows were re-indexed with their predecessor in the session.
        assert_eq!(found(&conn, "context:hiking"), ["e2"]);
        assert_eq!(found(&conn, "content:hiking"), ["e1"]);
        // New rows get it from the trigger; another session's turn is not context.
        turn(&conn, "e4", "s1", 4, "with my sister");
        turn(&conn, "e5", "s2", 5, "a reply");
        assert_eq!(found(&conn, "context:mountain"), ["e4"]);
        assert_eq!(found(&conn, "context:nothing"), ["e5"]);
        // A deleted row leaves the index without its text being recomputed
        // (the next turn keeps it as context: a snapshot taken at write time).
        conn.execute("DELETE FROM episodes WHERE id = 'e2'", [])
            .unwrap();
        assert!(found(&conn, "content:mountain").is_empty());
        assert_eq!(found(&conn, "mountain"), ["e4"]);
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM episodes_fts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4);
    }

    #[test]
    fn version_2_reindexes_cjk_rows_written_under_version_1() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::register_functions(&conn).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO memories (id, namespace, content, content_hash, kind, layer, importance, confidence, \
             decay_rate, created_at, modified_at, event_time) VALUES ('m1', 'default', '东京的会社で働く', 'h', \
             'semantic', 'buffer', 0.5, 1, 0.1, 0, 0, 0)",
            [],
        )
        .unwrap();
        let hits = |conn: &Connection| -> i64 {
            conn.query_row(
                "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH '\"会社\"'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(hits(&conn), 0, "version 1 indexed the run as one token");
        migrate(&mut conn).unwrap();
        assert_eq!(hits(&conn), 1, "version 2 re-indexed it by terms");
        assert_eq!(
            conn.query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
                .unwrap(),
            current_version()
        );
    }

    #[test]
    fn an_unchanged_text_is_not_reindexed_and_does_not_move_the_topic_counter() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::register_functions(&conn).unwrap();
        migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO memories (id, namespace, content, kind, layer, importance, confidence, decay_rate, \
             access_count, repetition_count, created_at, modified_at, event_time, created_epoch, tags, attributes, \
             source_ids, content_hash) VALUES ('m1', 'default', 'the deploy runs nightly', 'semantic', 'buffer', \
             0.5, 1.0, 0.1, 0, 0, 1, 1, 1, 0, '', '{}', '[]', 'h');",
        )
        .unwrap();
        let counter = |c: &Connection| -> String {
            c.query_row(
                "SELECT value FROM metadata WHERE key = 'memories_changed'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        let before = (conn.total_changes(), counter(&conn));
        // What the cycle's decay writes: every column, the text unchanged.
        conn.execute(
            "UPDATE memories SET content = content, tags = tags, layer = layer, valid_until = valid_until, \
             importance = 0.49 WHERE id = 'm1'",
            [],
        )
        .unwrap();
        assert_eq!(conn.total_changes() - before.0, 1, "only the row itself");
        assert_eq!(counter(&conn), before.1);
        conn.execute(
            "UPDATE memories SET content = 'the deploy runs at dawn' WHERE id = 'm1'",
            [],
        )
        .unwrap();
        assert!(
            conn.total_changes() - before.0 > 2,
            "the FTS entry follows the text"
        );
        assert_ne!(counter(&conn), before.1);
        let found: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'dawn'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 1);
    }
}
