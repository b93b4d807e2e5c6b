-- Outcome attestations this node verified (lamarck.node.store.attestations): a node's signed
-- verdict on one exact lesson version, from its own outcome. One row per attester and version
-- (the newest; the primary key), at most max_attesters_per_lesson per version (the put decides
-- under an advisory lock on the version), dropped max_age_days after they were made.
CREATE TABLE IF NOT EXISTS attestations (
    -- The content hash of the attested lesson version's signed bytes.
    memory_hash   text NOT NULL,
    attester_id   text NOT NULL,
    -- sha256 of `raw`: the record's identity in a Sync.
    content_hash  text NOT NULL UNIQUE,
    verdict       text NOT NULL CHECK (verdict IN ('confirm', 'contradict')),
    created_at    timestamptz NOT NULL,
    -- The exact signed bytes, re-sent unchanged.
    raw           bytea NOT NULL,
    PRIMARY KEY (memory_hash, attester_id)
);
-- Expiry deletes by age.
CREATE INDEX IF NOT EXISTS attestations_created_idx ON attestations (created_at);
