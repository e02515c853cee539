-- 0003 core: documents, document_status, chunks + row-level security.
--
-- Owner: store/indexer (issue 5). Read by the connector (document_status, documents),
-- the query service (documents, chunks under RLS) and the cache invalidator.
--
-- Who may see what (docs/indexing.md, "Row-level security"):
--   * ragline_query (NOBYPASSRLS, owns nothing) sees a row only when
--     tenant_id = current_setting('ragline.tenant', true) and, for tables carrying
--     acl_groups, acl_groups && string_to_array(current_setting('ragline.groups', true), ',').
--     With no settings both expressions are NULL/empty: it sees nothing (fails closed).
--   * the pipeline (connector, indexer, CLIs) connects with the admin DSN. Locally that is
--     the superuser (RLS never applies to superusers). Elsewhere grant the pipeline login
--     the NOLOGIN role ragline_pipeline: the permissive `pipeline_all` policies below let
--     its members read and write every row even though RLS is FORCE'd for the owner.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ragline_query') THEN
        CREATE ROLE ragline_query NOLOGIN NOBYPASSRLS;  -- normally created by 0001
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ragline_pipeline') THEN
        CREATE ROLE ragline_pipeline NOLOGIN;
    END IF;
END
$$;

-- ---------------------------------------------------------------------------- documents
-- One row per (tenant, document): the current generation's metadata, or a tombstone
-- (status 'deleted', no content) that keeps its source_seq so an older upsert arriving
-- late cannot resurrect the document.
CREATE TABLE IF NOT EXISTS documents (
    tenant_id       text        NOT NULL,
    document_id     text        NOT NULL,
    content_hash    text,
    meta_hash       text,
    source_seq      bigint      NOT NULL DEFAULT 0,   -- last content/delete seq applied
    acl_seq         bigint      NOT NULL DEFAULT 0,   -- last ACL seq applied (upsert or acl)
    generation      integer     NOT NULL DEFAULT 0,   -- +1 per applied content upsert/delete
    revision        bigint      NOT NULL DEFAULT 0,   -- +1 per any change (content, acl, delete, supersede)
    os_revision     bigint      NOT NULL DEFAULT 0,   -- revision OpenSearch is known to reflect
    status          text        NOT NULL CHECK (status IN ('indexed', 'deleted')),
    deleted_at      timestamptz,
    title           text,
    uri             text,
    source_type     text,
    mime_type       text,
    language        text,
    version         text,
    series_id       text,
    supersedes      text[]      NOT NULL DEFAULT '{}',
    effective_date  date,
    expiry_date     date,
    superseded      boolean     NOT NULL DEFAULT false,
    superseded_by   text,
    acl_groups      text[]      NOT NULL DEFAULT '{}',
    classification  text,
    trust           text,
    metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    findings        jsonb,                             -- FindingsSummary: never values
    chunk_count     integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    indexed_at      timestamptz,
    PRIMARY KEY (tenant_id, document_id)
);

CREATE INDEX IF NOT EXISTS documents_series_idx ON documents (tenant_id, series_id)
    WHERE series_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS documents_supersedes_idx ON documents USING gin (supersedes);
CREATE INDEX IF NOT EXISTS documents_acl_idx ON documents USING gin (acl_groups);
CREATE INDEX IF NOT EXISTS documents_os_lag_idx ON documents (tenant_id)
    WHERE os_revision < revision;

-- ---------------------------------------------------------------------- document_status
-- Where each document is in the pipeline. A row is only overwritten by an event whose
-- source_seq is >= the stored one.
CREATE TABLE IF NOT EXISTS document_status (
    tenant_id     text        NOT NULL,
    document_id   text        NOT NULL,
    source_seq    bigint      NOT NULL DEFAULT 0,
    content_hash  text,
    stage         text,
    status        text        NOT NULL
                  CHECK (status IN ('accepted', 'indexed', 'quarantined', 'deleted', 'failed')),
    reason_code   text,
    reason        text,                                -- never document text or values
    findings      jsonb,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, document_id)
);

CREATE INDEX IF NOT EXISTS document_status_status_idx ON document_status (tenant_id, status);

-- ------------------------------------------------------------------------------- chunks
-- Parent and child chunks of the current generation of every indexed document. Columns
-- the query side filters on (acl, classification, version, dates, superseded) are
-- denormalized from documents so filtering happens before ranking.
-- chunk_id is a sha256 over (document_id, content_hash, chunker version, position);
-- the key includes tenant_id because two tenants may hold the same document id + bytes.
CREATE TABLE IF NOT EXISTS chunks (
    tenant_id           text        NOT NULL,
    chunk_id            text        NOT NULL,
    document_id         text        NOT NULL,
    generation          integer     NOT NULL,
    parent_id           text,
    level               text        NOT NULL CHECK (level IN ('parent', 'child')),
    ordinal             integer     NOT NULL,
    text                text        NOT NULL,
    contextual_header   text,
    section_path        text[]      NOT NULL DEFAULT '{}',
    content_type        text        NOT NULL,
    page_start          integer,
    page_end            integer,
    line_start          integer,
    line_end            integer,
    token_count         integer     NOT NULL DEFAULT 0,
    metadata            jsonb       NOT NULL DEFAULT '{}'::jsonb,  -- enrichment, extra, strategy
    acl_groups          text[]      NOT NULL DEFAULT '{}',
    classification      text,
    trust               text,
    version             text,
    series_id           text,
    effective_date      date,
    expiry_date         date,
    superseded          boolean     NOT NULL DEFAULT false,
    injection_suspect   boolean     NOT NULL DEFAULT false,
    pii_types           text[]      NOT NULL DEFAULT '{}',
    embedding           vector(384),                   -- NULL for parents
    embedding_model     text,
    embedding_revision  text,
    language            text,
    title               text,
    uri                 text,
    source_type         text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, chunk_id),
    FOREIGN KEY (tenant_id, document_id) REFERENCES documents (tenant_id, document_id)
        ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS chunks_document_idx ON chunks (tenant_id, document_id, generation);
CREATE INDEX IF NOT EXISTS chunks_parent_idx ON chunks (tenant_id, parent_id)
    WHERE parent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS chunks_acl_idx ON chunks USING gin (acl_groups);
CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks
    USING hnsw (embedding vector_cosine_ops);

-- ----------------------------------------------------------------------- pending ACL
-- An ACL change (fast path) can arrive before the document's first upsert; it is kept
-- here and applied by that upsert if it is newer. Pipeline-only: no query grant.
CREATE TABLE IF NOT EXISTS pending_acl (
    tenant_id       text        NOT NULL,
    document_id     text        NOT NULL,
    acl_seq         bigint      NOT NULL,
    acl_groups      text[]      NOT NULL,
    classification  text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, document_id)
);

-- ---------------------------------------------------------------------------- RLS
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;
ALTER TABLE document_status ENABLE ROW LEVEL SECURITY;
ALTER TABLE document_status FORCE ROW LEVEL SECURITY;
ALTER TABLE chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE chunks FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS tenant_acl_read ON documents;
CREATE POLICY tenant_acl_read ON documents FOR SELECT TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true)
           AND acl_groups && string_to_array(current_setting('ragline.groups', true), ','));

DROP POLICY IF EXISTS tenant_acl_read ON chunks;
CREATE POLICY tenant_acl_read ON chunks FOR SELECT TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true)
           AND acl_groups && string_to_array(current_setting('ragline.groups', true), ','));

-- document_status has no ACL of its own (a quarantined document may never get a
-- documents row): tenant-scoped, and still closed unless groups are set too.
DROP POLICY IF EXISTS tenant_read ON document_status;
CREATE POLICY tenant_read ON document_status FOR SELECT TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true)
           AND coalesce(current_setting('ragline.groups', true), '') <> '');

DROP POLICY IF EXISTS pipeline_all ON documents;
CREATE POLICY pipeline_all ON documents FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS pipeline_all ON document_status;
CREATE POLICY pipeline_all ON document_status FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS pipeline_all ON chunks;
CREATE POLICY pipeline_all ON chunks FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);

GRANT SELECT ON documents, document_status, chunks TO ragline_query;
