-- The import decision taken when a record was held: the transferred confidence and the
-- transfer rule that produced it. An operator's approval stores exactly that decision.
-- NULL for rows held before this migration (approval then re-runs the pipeline's decision).
ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS confidence double precision
    CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1));
ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS transfer_rule text;
