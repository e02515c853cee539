-- 0005 embedding cache: one vector per (model, revision, sha256 of the embedded text), so
-- a re-ingested or re-chunked document re-embeds only the chunks whose text changed.
-- The vector column is unconstrained so another model (another dimension) can share it.
-- Pipeline-only: no query grant.

CREATE TABLE IF NOT EXISTS embedding_cache (
    model       text        NOT NULL,
    revision    text        NOT NULL,
    text_hash   text        NOT NULL,
    dim         integer     NOT NULL,
    embedding   vector      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, revision, text_hash)
);

CREATE INDEX IF NOT EXISTS embedding_cache_age_idx ON embedding_cache (created_at);

ALTER TABLE embedding_cache ENABLE ROW LEVEL SECURITY;
ALTER TABLE embedding_cache FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS pipeline_all ON embedding_cache;
CREATE POLICY pipeline_all ON embedding_cache FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
