//! Versioned schema migrations, tracked in `PRAGMA user_version`. A released
//! migration is never edited; a change is a new entry at the end. The SQL
//! lives in `schema/NNNN_*.sql`, one file per version, which the JavaScript
//! host (`host/js`) applies too: both hosts keep one schema.

use rusqlite::Connection;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("schema/0001_base.sql"),
    include_str!("schema/0002_cjk_index.sql"),
    include_str!("schema/0003_turn_context.sql"),
    include_str!("schema/0004_session_watermark.sql"),
    include_str!("schema/0005_memory_versions.sql"),
    include_str!("schema/0006_topic_counter.sql"),
    include_str!("schema/0007_unchanged_rows.sql"),
    include_str!("schema/0008_vector_changes.sql"),
    include_str!("schema/0009_vector_pending.sql"),
    include_str!("schema/0010_keyset_paging.sql"),
    include_str!("schema/0011_cycle_indexes.sql"),
    include_str!("schema/0012_session_turns.sql"),
    include_str!("schema/0013_text_changes.sql"),
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
    fn version_12_numbers_the_turns_stored_before_in_dialogue_order() {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::register_functions(&conn).unwrap();
        for m in &MIGRATIONS[..11] {
            conn.execute_batch(m).unwrap();
        }
        conn.pragma_update(None, "user_version", 11).unwrap();
        // Stored out of order; two sessions; one turn numbered by its caller.
        for (id, session, at, attrs) in [
            ("b", "s1", 20, r#"{"dia_id":"D1:2"}"#),
            ("a", "s1", 10, "{}"),
            ("x", "s2", 5, "{}"),
            ("c", "s1", 30, r#"{"session_turn":9}"#),
        ] {
            conn.execute(
                "INSERT INTO episodes (id, namespace, session_id, source_role, content, event_time, created_at, attributes) \
                 VALUES (?1, 'default', ?2, 'ana', 'hello', ?3, 0, ?4)",
                rusqlite::params![id, session, at, attrs],
            )
            .unwrap();
        }
        migrate(&mut conn).unwrap();
        let attrs = |id: &str| -> serde_json::Value {
            let a: String = conn
                .query_row("SELECT attributes FROM episodes WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap();
            serde_json::from_str(&a).unwrap()
        };
        assert_eq!(attrs("a")["session_turn"], 1);
        assert_eq!(attrs("b")["session_turn"], 2);
        assert_eq!(attrs("b")["dia_id"], "D1:2", "the caller's attributes stay");
        assert_eq!(
            attrs("c")["session_turn"],
            9,
            "a place the caller set is kept"
        );
        assert_eq!(attrs("x")["session_turn"], 1);
    }

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
