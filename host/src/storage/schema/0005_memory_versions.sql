-- 5: the history of memories: each state an edit, a merge or a revert
-- replaced, whole (the memory row as JSON), restorable.
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
