-- lamarck lesson store, schema version 1.
-- Run by lamarck.node.store.migrate inside one transaction, under an advisory lock, after
-- CREATE EXTENSION vector. {{EMBEDDING_DIM}} is replaced by the store's embedding dimension
-- (also recorded in store_settings, so a node started with another embedder is refused).

CREATE TABLE lessons (
    id                  text PRIMARY KEY,
    content             text NOT NULL,
    operation           text NOT NULL,
    scope               text NOT NULL,
    status              text NOT NULL
                        CHECK (status IN ('claimed', 'active', 'superseded', 'retired')),
    confidence          double precision NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    category            text NOT NULL DEFAULT 'lesson'
                        CHECK (category IN ('lesson', 'situation')),
    evidence            text[] NOT NULL DEFAULT '{}',
    -- id of the newer version, or 'retired:<who>'; history walks this chain.
    superseded_by       text,
    supersedes          text,
    last_used           timestamptz,
    use_count           integer NOT NULL DEFAULT 0,
    confirmations       integer NOT NULL DEFAULT 0,
    contradictions      integer NOT NULL DEFAULT 0,
    confirmed_projects  text[] NOT NULL DEFAULT '{}',
    context             jsonb NOT NULL DEFAULT '{}',
    situation           jsonb,
    tags                text[] NOT NULL DEFAULT '{}',
    memory_type         text NOT NULL DEFAULT 'AC',
    access_level        text NOT NULL DEFAULT 'public',
    source_node_id      text,
    imported_from       text,
    original_confidence double precision,
    -- an imported record's exact received bytes, to re-verify and re-forward unchanged.
    signed_record       bytea,
    content_hash        text,
    -- computed by this node's embedder, never taken from a record.
    embedding           vector({{EMBEDDING_DIM}})
);

-- Recall and prompt queries select by status and scope; attribution and
-- check_operation by operation.
CREATE INDEX lessons_status_scope_idx ON lessons (status, scope);
CREATE INDEX lessons_scope_idx ON lessons (scope);
CREATE INDEX lessons_operation_idx ON lessons (operation, status);
-- One stored lesson per imported record; local lessons have no content hash.
CREATE UNIQUE INDEX lessons_content_hash_key ON lessons (content_hash)
    WHERE content_hash IS NOT NULL;
-- User retirements are few; this keeps retired_evidence_ids off a full scan.
CREATE INDEX lessons_retired_idx ON lessons (id) WHERE superseded_by LIKE 'retired:%';
-- Cosine HNSW (pgvector defaults m = 16, ef_construction = 64); queries set hnsw.ef_search.
-- PostgresLessonStore.bulk_load() drops and rebuilds it around large loads.
CREATE INDEX lessons_embedding_hnsw ON lessons USING hnsw (embedding vector_cosine_ops);

CREATE TABLE lesson_provenance (
    id              bigserial PRIMARY KEY,
    lesson_id       text NOT NULL REFERENCES lessons (id) ON DELETE CASCADE,
    source_node_id  text NOT NULL,
    via_node_id     text NOT NULL,
    received_at     timestamptz NOT NULL,
    content_hash    text NOT NULL
);
CREATE INDEX lesson_provenance_lesson_idx ON lesson_provenance (lesson_id, id);

CREATE TABLE outcomes (
    id          text PRIMARY KEY,
    session_id  text NOT NULL,
    turn_index  integer NOT NULL,
    project     text NOT NULL,
    passed      boolean NOT NULL,
    claim_ok    boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    record      jsonb NOT NULL
);
CREATE INDEX outcomes_created_idx ON outcomes (created_at DESC, id);

CREATE TABLE quarantine (
    id              text PRIMARY KEY,
    content_hash    text NOT NULL UNIQUE,
    source_node_id  text NOT NULL,
    reasons         text[] NOT NULL,
    received_at     timestamptz NOT NULL,
    signed_record   bytea NOT NULL,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'approved', 'rejected'))
);
CREATE INDEX quarantine_state_idx ON quarantine (state, received_at, id);

CREATE TABLE rejections (
    id              bigserial PRIMARY KEY,
    source_node_id  text NOT NULL,
    reason          text NOT NULL,
    content_hash    text NOT NULL,
    received_at     timestamptz NOT NULL,
    detail          text NOT NULL DEFAULT ''
);
CREATE INDEX rejections_received_idx ON rejections (received_at DESC, id DESC);
CREATE INDEX rejections_source_idx ON rejections (source_node_id);

-- Gossip delivery queue: one row per (record, target peer); retried with backoff until
-- delivered_at is set. Written in the same transaction as the lesson it announces.
CREATE TABLE outbox (
    id               bigserial PRIMARY KEY,
    lesson_id        text NOT NULL REFERENCES lessons (id) ON DELETE CASCADE,
    content_hash     text NOT NULL,
    target_node_id   text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (content_hash, target_node_id)
);
CREATE INDEX outbox_due_idx ON outbox (next_attempt_at) WHERE delivered_at IS NULL;
