-- 7: a row written back unchanged in its text and tags (the cycle's
-- importance decay writes every memory) no longer re-segments its FTS
-- entry, and moves the topic counter only when text, layer or validity
-- really changed (UPDATE OF fires on any SET that names the column).
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
