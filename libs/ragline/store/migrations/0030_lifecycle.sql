-- 0030 lifecycle (issue 12): the ACL key's rank, the seq reset audit, and tombstones
-- that keep nothing of the deleted document ('awaiting_content': 0031).
--
-- Owner: store/indexer. Additive: the previous release ignores the new columns (their
-- defaults reproduce its behaviour) and never writes the new status value.

-- ACL statements are ordered by (acl_seq, acl_rank): 0 = the ACL an upsert carried
-- (or its fast-path narrowing), 1 = an ACL change. An ACL change at the current revision
-- applies; an upsert never overwrites an ACL change stated at its own seq
-- (libs/ragline/indexing/order.py, docs/indexing.md "Order rules").
ALTER TABLE documents ADD COLUMN IF NOT EXISTS acl_rank smallint NOT NULL DEFAULT 0;
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS acl_rank smallint NOT NULL DEFAULT 0;

-- `ragline documents reset-seq`: who moved a document's sequence back, from what, why
CREATE TABLE IF NOT EXISTS seq_resets (
    id              bigserial   PRIMARY KEY,
    tenant_id       text        NOT NULL,
    document_id     text        NOT NULL,
    old_source_seq  bigint,
    old_acl_seq     bigint,
    old_status_seq  bigint,
    new_seq         bigint      NOT NULL,
    actor           text        NOT NULL,
    reason          text        NOT NULL,
    reset_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS seq_resets_doc_idx ON seq_resets (tenant_id, document_id);
ALTER TABLE seq_resets ENABLE ROW LEVEL SECURITY;
ALTER TABLE seq_resets FORCE ROW LEVEL SECURITY;
CREATE POLICY pipeline_all ON seq_resets FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
GRANT SELECT, INSERT ON seq_resets TO ragline_pipeline;
GRANT USAGE ON SEQUENCE seq_resets_id_seq TO ragline_pipeline;

-- a deleted document is gone for every reader: tombstones written before this release
-- still held the title, uri, version... (the seqs and the ACL stay: they guard replays)
UPDATE documents SET title = NULL, uri = NULL, version = NULL, series_id = NULL,
       mime_type = NULL, language = NULL, source_type = NULL, trust = NULL,
       effective_date = NULL, expiry_date = NULL
 WHERE status = 'deleted'
   AND (title IS NOT NULL OR uri IS NOT NULL OR version IS NOT NULL OR series_id IS NOT NULL
        OR mime_type IS NOT NULL OR language IS NOT NULL OR source_type IS NOT NULL
        OR trust IS NOT NULL OR effective_date IS NOT NULL OR expiry_date IS NOT NULL);
