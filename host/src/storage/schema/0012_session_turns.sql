-- 12: each turn's place in its session (`session_turn` in its attributes,
-- 1 for the first), for recall's reply term (`core/src/read/dialogue.rs`):
-- ingest stamps it on new turns; the turns stored before get theirs here,
-- counted in dialogue order. A place the caller set is kept.
UPDATE episodes SET attributes = json_set(attributes, '$.session_turn', t.n)
FROM (
    SELECT rowid AS r,
           row_number() OVER (PARTITION BY namespace, session_id ORDER BY event_time, rowid) AS n
    FROM episodes
) AS t
WHERE episodes.rowid = t.r
  AND json_type(episodes.attributes) = 'object'
  AND json_extract(episodes.attributes, '$.session_turn') IS NULL;
