-- 1: everything both seeds store.
CREATE TABLE memories (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    namespace        TEXT NOT NULL,
    content          TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    kind             TEXT NOT NULL,
    layer            TEXT NOT NULL,
    importance       REAL NOT NULL,
    confidence       REAL NOT NULL,
    decay_rate       REAL NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 0,
    repetition_count INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    modified_at      INTEGER NOT NULL,
    last_accessed    INTEGER,
    event_time       INTEGER NOT NULL,
    created_epoch    INTEGER NOT NULL DEFAULT 0,
    valid_until      INTEGER,
    invalid_reason   TEXT,
    session_id       TEXT,
    source           TEXT,
    source_role      TEXT,
    tags             TEXT NOT NULL DEFAULT '[]',
    attributes       TEXT NOT NULL DEFAULT '{}',
    source_ids       TEXT NOT NULL DEFAULT '[]',
    supersedes       TEXT,
    superseded_by    TEXT
);
CREATE INDEX idx_memories_ns_state ON memories(namespace, valid_until, layer);
CREATE INDEX idx_memories_hash ON memories(namespace, content_hash);
CREATE INDEX idx_memories_created ON memories(namespace, created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, tags,
    content='memories', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.rowid, old.content, old.tags);
    INSERT INTO memories_fts(rowid, content, tags) VALUES (new.rowid, new.content, new.tags);
END;

CREATE TABLE episodes (
    rowid          INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    namespace      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    source_role    TEXT NOT NULL,
    content        TEXT NOT NULL,
    event_time     INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    valid_until    INTEGER,
    invalid_reason TEXT,
    attributes     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX idx_episodes_session ON episodes(namespace, session_id, event_time);

CREATE VIRTUAL TABLE episodes_fts USING fts5(
    content,
    content='episodes', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO episodes_fts(rowid, content) VALUES (new.rowid, new.content);
END;

CREATE TABLE sessions (
    namespace       TEXT NOT NULL,
    id              TEXT NOT NULL,
    first_seen_at   INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL,
    turn_count      INTEGER NOT NULL DEFAULT 0,
    consolidated_at INTEGER,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE entities (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    name_lower     TEXT NOT NULL,
    entity_type    TEXT NOT NULL,
    aliases        TEXT NOT NULL DEFAULT '[]',
    summary        TEXT,
    mention_count  INTEGER NOT NULL DEFAULT 1,
    protected      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_entities_name ON entities(namespace, name_lower, entity_type);
CREATE TABLE entity_aliases (
    entity_id   TEXT NOT NULL REFERENCES entities(id),
    alias_lower TEXT NOT NULL,
    PRIMARY KEY (alias_lower, entity_id)
);
CREATE TABLE memory_entities (
    memory_id TEXT NOT NULL REFERENCES memories(id),
    entity_id TEXT NOT NULL REFERENCES entities(id),
    PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX idx_me_entity ON memory_entities(entity_id);
CREATE TABLE episode_entities (
    episode_id TEXT NOT NULL REFERENCES episodes(id),
    entity_id  TEXT NOT NULL REFERENCES entities(id),
    PRIMARY KEY (episode_id, entity_id)
);
CREATE INDEX idx_ee_entity ON episode_entities(entity_id);

CREATE TABLE facts (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    subject       TEXT NOT NULL,
    predicate     TEXT NOT NULL,
    object        TEXT NOT NULL,
    confidence    REAL NOT NULL,
    valid_from    INTEGER NOT NULL,
    valid_until   INTEGER,
    superseded_by TEXT,
    memory_id     TEXT
);
CREATE INDEX idx_facts_subject ON facts(namespace, lower(subject));
CREATE INDEX idx_facts_object ON facts(namespace, lower(object));

CREATE TABLE metadata (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE llm_usage (
    id            INTEGER PRIMARY KEY,
    at            INTEGER NOT NULL,
    component     TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    outcome       TEXT NOT NULL
);

CREATE TABLE audit_log (
    id        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    action    TEXT NOT NULL,
    target_id TEXT NOT NULL,
    detail    TEXT NOT NULL
);
CREATE INDEX idx_audit_target ON audit_log(target_id);
