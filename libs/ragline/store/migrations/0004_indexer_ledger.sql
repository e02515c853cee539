-- 0004 indexer ledger: the ids of processed events, recorded in the same transaction as
-- their effect (idempotency next to the write), with the outcome that was emitted so a
-- redelivered event re-emits the same doc.indexed. Pipeline-only: no query grant.

CREATE TABLE IF NOT EXISTS processed_events (
    consumer      text        NOT NULL,
    event_id      text        NOT NULL,
    tenant_id     text        NOT NULL,
    document_id   text        NOT NULL,
    source_seq    bigint      NOT NULL,
    outcome       jsonb       NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- retention: `ragline repair --prune-ledger-days N` deletes old entries; the source_seq
-- guard keeps replays harmless after pruning.
CREATE INDEX IF NOT EXISTS processed_events_age_idx ON processed_events (processed_at);

ALTER TABLE processed_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE processed_events FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS pipeline_all ON processed_events;
CREATE POLICY pipeline_all ON processed_events FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);

ALTER TABLE pending_acl ENABLE ROW LEVEL SECURITY;
ALTER TABLE pending_acl FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS pipeline_all ON pending_acl;
CREATE POLICY pipeline_all ON pending_acl FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
