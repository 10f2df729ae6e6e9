-- 3: a turn is indexed with the turn before it in its session, in a
-- second column (`context`) that recall weighs less than the turn's own
-- words: an answer is found by the question it answers. The index keeps
-- no copy of the text (contentless, deletable by rowid), so a delete
-- needs no recomputed context.
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
