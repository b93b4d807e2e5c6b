-- Evidence a user retired is never re-learned (issue 17 §5): each new lesson asks only about
-- the outcome ids at hand (``retired_evidence_ids(among=...)``), answered by this index over
-- the evidence of retired lessons instead of reading every retired lesson's evidence.
CREATE INDEX IF NOT EXISTS lessons_retired_evidence_gin ON lessons USING gin (evidence)
    WHERE superseded_by LIKE 'retired:%';
