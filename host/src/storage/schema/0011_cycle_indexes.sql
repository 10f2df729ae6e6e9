-- 11: a consolidation cycle reads what it can act on, not the store
-- (`lifecycle/cycle.rs`): Working memories changed since the last
-- cycle, and those important enough for the gate.
CREATE INDEX idx_memories_layer_modified ON memories(namespace, layer, modified_at);
CREATE INDEX idx_memories_layer_importance ON memories(namespace, layer, importance);
