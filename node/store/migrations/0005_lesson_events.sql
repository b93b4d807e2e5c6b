-- The lesson event log (issue 10 §2.5): versions, confirmations, contradictions, imports,
-- retirements and operator decisions, each with its time, actor, confidence before and after,
-- and reason. ``lesson_id`` is a lesson's id or, for an operator's decision on a held record,
-- its quarantine row's id: no foreign key, the log outlives neither and binds neither.
CREATE TABLE IF NOT EXISTS lesson_events (
    id                  bigserial PRIMARY KEY,
    lesson_id           text NOT NULL,
    at                  timestamptz NOT NULL,
    kind                text NOT NULL,
    actor               text NOT NULL,
    confidence_before   double precision,
    confidence_after    double precision,
    reason              text NOT NULL DEFAULT '',
    outcome_id          text NOT NULL DEFAULT '',
    version             bigint NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS lesson_events_by_lesson ON lesson_events (lesson_id, at, id);

-- The confidence an imported copy was stored at when its source's latest version arrived:
-- this node's own evidence is measured from it (node/learning/evidence.py).
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS transferred_confidence double precision;
