-- 4: a per-session watermark: how many turns are consolidated, so turns
-- arriving after a consolidation are consolidated too, from there.
-- Sessions consolidated before it count all their turns as done.
ALTER TABLE sessions ADD COLUMN consolidated_turns INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET consolidated_turns = turn_count WHERE consolidated_at IS NOT NULL;
