-- lamarck reputation book, schema version 2 (issue 5).
-- Every reputation event this node applied, in the order it applied them, so that a restart
-- replays them through the pure scorer and rebuilds the same scores (a peer caught
-- equivocating stays penalised). Written by lamarck.node.store.reputation.PostgresReputation.

CREATE TABLE reputation_events (
    -- Emission order: the replay order (late events are clamped to the state's time by the
    -- scorer, so the order of `at` would not rebuild the same state).
    seq          bigserial PRIMARY KEY,
    -- ReputationEvent.key: the dedupe identity; a flush retried after a lost commit
    -- acknowledgement inserts nothing twice (ON CONFLICT DO NOTHING).
    key          text NOT NULL UNIQUE,
    kind         text NOT NULL,
    node_id      text NOT NULL,
    at           timestamptz NOT NULL,
    -- UTC offset of `at` as emitted, in seconds: the key hashes at.isoformat(), which
    -- timestamptz alone cannot give back for a non-UTC offset.
    at_offset_s  integer NOT NULL DEFAULT 0,
    weight       double precision NOT NULL CHECK (weight >= 0 AND weight <= 1),
    record_hash  text NOT NULL DEFAULT '',
    domain       text NOT NULL DEFAULT '',
    detail       text NOT NULL DEFAULT '',
    -- The book's clock when the event was applied: a node's first event starts its state at
    -- min(at, clock), so the replay needs that clock reading to be exact.
    emitted_at   timestamptz NOT NULL
);
-- An operator's "what happened to node X" reads one node's history in order.
CREATE INDEX reputation_events_node_idx ON reputation_events (node_id, seq);
