-- 10: keyset paging of memories newest first (`list-memories` with
-- `after-time`/`after-id`, the cycle's read of every active memory)
-- walks an index instead of sorting the store once per page.
DROP INDEX IF EXISTS idx_memories_created;
CREATE INDEX idx_memories_created ON memories(namespace, created_at, id);
CREATE INDEX idx_memories_created_all ON memories(created_at, id);
