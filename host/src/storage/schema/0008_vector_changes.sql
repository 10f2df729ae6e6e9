-- 8: the vector writes since a persisted HNSW graph's snapshot, so a
-- graph loaded at start knows exactly which of its points are stale
-- and which vectors came after it (storage/ann_file.rs).
CREATE TABLE vector_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    namespace TEXT NOT NULL,
    row INTEGER NOT NULL
);
CREATE INDEX vector_changes_partition ON vector_changes(target, namespace, seq);
