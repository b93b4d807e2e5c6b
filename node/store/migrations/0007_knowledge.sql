-- Knowledge that stays true (issue 18): a lesson's open conflicts and the conflicts it won,
-- and a small table of node state documents (what the context-variable learner has learned).
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS contested_with text[] NOT NULL DEFAULT '{}';
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS verified_against text[] NOT NULL DEFAULT '{}';
CREATE TABLE IF NOT EXISTS node_state (
    key         text PRIMARY KEY,
    document    jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
