-- 0007 status ACL: document_status carries the ACL its writer knew, so the owners of a
-- document quarantined before it was ever indexed (no documents row) can see why it is
-- not searchable, and nobody else can.
--
-- Owner: store/indexer. Written by the connector ('accepted', the upsert's meta ACL) and
-- the indexer (indexed / quarantined / ACL changes; deletes keep the last known ACL).
-- acl_seq orders the ACL like documents.acl_seq does: a status write never replaces the
-- ACL with one from an older seq (an upsert replayed after a newer ACL change).
--
-- Read rule for ragline_query (docs/query.md, "Document endpoints"): the tenant matches
-- AND (the row's own acl_groups overlap the principal's groups OR the documents row of
-- the same document is readable). Rows written before this migration have NULL
-- acl_groups: they stay visible exactly as before (through their documents row) until
-- their next status write fills the column. Unset settings still give NULL/empty arrays:
-- nothing is visible (fails closed).

ALTER TABLE document_status ADD COLUMN IF NOT EXISTS acl_groups text[];
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS acl_seq bigint;

CREATE INDEX IF NOT EXISTS document_status_acl_idx ON document_status USING gin (acl_groups);

-- 0003's tenant-only policy is replaced (it relied on the API joining a visible documents
-- row; now the database filters by itself)
DROP POLICY IF EXISTS tenant_read ON document_status;
DROP POLICY IF EXISTS tenant_acl_read ON document_status;
CREATE POLICY tenant_acl_read ON document_status FOR SELECT TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true)
           AND (acl_groups && string_to_array(current_setting('ragline.groups', true), ',')
                OR EXISTS (
                    SELECT 1 FROM documents d
                    WHERE d.tenant_id = document_status.tenant_id
                      AND d.document_id = document_status.document_id
                      AND d.acl_groups
                          && string_to_array(current_setting('ragline.groups', true), ','))));
