-- 13: the changes to the indexed text of memories and episodes, in commit
-- order, so the derived full-text index (storage/text/) kept in memory
-- replays exactly what was written since it last looked — by this
-- process, another one, or before a restart. An update that leaves the
-- text as it was (the cycle's decay writes every column) logs nothing, as
-- the FTS5 triggers of migration 7 reindex nothing. Pruned by the writer
-- (`text_changes_pruned` in metadata says through which number).
CREATE TABLE text_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    namespace TEXT NOT NULL,
    row INTEGER NOT NULL
);
CREATE INDEX text_changes_partition ON text_changes(target, namespace, seq);
CREATE TRIGGER memories_text_insert AFTER INSERT ON memories BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('memories', new.namespace, new.rowid);
END;
CREATE TRIGGER memories_text_update AFTER UPDATE OF content, tags, namespace ON memories
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags OR old.namespace IS NOT new.namespace BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('memories', new.namespace, new.rowid);
    INSERT INTO text_changes(target, namespace, row)
        SELECT 'memories', old.namespace, old.rowid WHERE old.namespace IS NOT new.namespace;
END;
CREATE TRIGGER memories_text_delete AFTER DELETE ON memories BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('memories', old.namespace, old.rowid);
END;
CREATE TRIGGER episodes_text_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('episodes', new.namespace, new.rowid);
END;
CREATE TRIGGER episodes_text_update AFTER UPDATE OF content, namespace ON episodes
WHEN old.content IS NOT new.content OR old.namespace IS NOT new.namespace BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('episodes', new.namespace, new.rowid);
    INSERT INTO text_changes(target, namespace, row)
        SELECT 'episodes', old.namespace, old.rowid WHERE old.namespace IS NOT new.namespace;
END;
CREATE TRIGGER episodes_text_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO text_changes(target, namespace, row) VALUES ('episodes', old.namespace, old.rowid);
END;
