-- The evidence of user-retired lessons in a table of its own (issue 17 §5), kept by a trigger.
-- Migration 0008 indexed it with a partial GIN index on lessons.evidence. An index on a column
-- makes every update that changes that column a new row version in every index of the table,
-- HNSW included, whether or not the row is retired. A confirmation appends to the evidence,
-- so at 100k lessons re-proving one cost 27 ms against 11 ms at 1k. Here no index of
-- ``lessons`` reads the evidence, and a confirmation can be a heap-only update.
CREATE TABLE IF NOT EXISTS retired_evidence (
    outcome_id text NOT NULL,
    lesson_id  text NOT NULL REFERENCES lessons (id) ON DELETE CASCADE,
    PRIMARY KEY (outcome_id, lesson_id)
);

CREATE OR REPLACE FUNCTION lessons_retired_evidence() RETURNS trigger AS $$
BEGIN
    -- Idempotent for every write path (insert, update, COPY): the table mirrors the row.
    DELETE FROM retired_evidence WHERE lesson_id = NEW.id;
    IF NEW.superseded_by LIKE 'retired:%' THEN
        INSERT INTO retired_evidence (outcome_id, lesson_id)
        SELECT DISTINCT e, NEW.id FROM unnest(NEW.evidence) AS e
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS lessons_retired_evidence_insert ON lessons;
DROP TRIGGER IF EXISTS lessons_retired_evidence_update ON lessons;
-- Only rows that are or were user-retired run the function (the WHEN clause is checked first).
CREATE TRIGGER lessons_retired_evidence_insert
    AFTER INSERT ON lessons
    FOR EACH ROW
    WHEN (NEW.superseded_by LIKE 'retired:%')
    EXECUTE FUNCTION lessons_retired_evidence();
CREATE TRIGGER lessons_retired_evidence_update
    AFTER UPDATE ON lessons
    FOR EACH ROW
    WHEN (NEW.superseded_by LIKE 'retired:%' OR OLD.superseded_by LIKE 'retired:%')
    EXECUTE FUNCTION lessons_retired_evidence();

INSERT INTO retired_evidence (outcome_id, lesson_id)
SELECT DISTINCT e, l.id FROM lessons l, unnest(l.evidence) AS e
WHERE l.superseded_by LIKE 'retired:%'
ON CONFLICT DO NOTHING;

DROP INDEX IF EXISTS lessons_retired_evidence_gin;
