-- What established a reputation event (ReputationEvent.cause): for a reality event, the outcome
-- that judged the lesson. Its key is then (record, outcome, kind) instead of its time, so one
-- outcome reported by two paths is stored, replayed and shown once. Rows written before keep
-- '' and their time-based keys.
ALTER TABLE reputation_events ADD COLUMN IF NOT EXISTS cause text NOT NULL DEFAULT '';
