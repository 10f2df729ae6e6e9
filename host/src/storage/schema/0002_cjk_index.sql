-- 2: the full-text index sees CJK runs as the query does (segmented by
-- `mnemo_index_text`, the core's `text::index_text`); existing rows are
-- re-indexed.
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
