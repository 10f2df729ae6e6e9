-- 6: a counter of the changes that matter to the topic trees (a memory
-- stored, its text, layer or validity changed), so the server's
-- debounced rebuild can tell them from reads and touches cheaply.
INSERT OR IGNORE INTO metadata(key, value) VALUES ('memories_changed', '0');
CREATE TRIGGER memories_changed_insert AFTER INSERT ON memories BEGIN
    UPDATE metadata SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memories_changed';
END;
CREATE TRIGGER memories_changed_update AFTER UPDATE OF content, layer, valid_until ON memories BEGIN
    UPDATE metadata SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memories_changed';
END;
