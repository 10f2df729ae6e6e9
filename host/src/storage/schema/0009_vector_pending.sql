-- 9: the rows waiting for a vector, kept by triggers and the vector
-- writes, so the background embedding finds its next batch without
-- scanning the whole store twice a second.
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
