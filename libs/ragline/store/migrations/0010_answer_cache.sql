-- 0010 answer cache (owner: cache, issue 7; docs/cache.md).
--
-- answer_cache: one row per cached search result, keyed by tenant + scope (sorted groups)
-- + request hash + index version + lexical guard + query (exact hash, or the normalized
-- query vector for semantic hits). document_ids is the reverse index document -> entries
-- (GIN) the invalidator deletes by; chunk_ids lets a lookup check that every cited chunk
-- is still there and still visible.
--
-- RLS: the query role (ragline_query) reads and writes only rows of EXACTLY its scope:
-- tenant = ragline.tenant and groups = ragline.groups (both set per transaction by
-- store/rls.py). An entry built for scope {a,b} is invisible to {a} and to {a,b,c}.
-- It may SELECT, INSERT and UPDATE (hit counters, refresh on conflict), never DELETE:
-- eviction belongs to the invalidator and the sweeper (admin DSN / ragline_pipeline).
--
-- answer_cache_fence: per (tenant, group) the time of the last invalidation touching
-- that group; a store whose search began before it is refused (a search that read the
-- index before a change must not be cached after the change's eviction ran).

CREATE TABLE IF NOT EXISTS answer_cache (
    entry_id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       text        NOT NULL,
    groups          text[]      NOT NULL,
    scope_hash      text        NOT NULL,
    request_hash    text        NOT NULL,
    index_version   text        NOT NULL,
    guard_hash      text        NOT NULL,
    query_hash      text        NOT NULL,
    mode            text        NOT NULL,
    embedding       vector,                                -- NULL: exact match only
    response        bytea       NOT NULL,                  -- zlib(JSON SearchResponse)
    size_bytes      integer     NOT NULL,
    document_ids    text[]      NOT NULL DEFAULT '{}',
    chunk_ids       text[]      NOT NULL DEFAULT '{}',
    built_at        timestamptz NOT NULL,                  -- DB clock before retrieval began
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    last_hit_at     timestamptz,
    hits            integer     NOT NULL DEFAULT 0,
    CONSTRAINT answer_cache_key UNIQUE
        (tenant_id, scope_hash, request_hash, index_version, guard_hash, query_hash)
);

CREATE INDEX IF NOT EXISTS answer_cache_docs_idx ON answer_cache USING gin (document_ids);
CREATE INDEX IF NOT EXISTS answer_cache_groups_idx ON answer_cache USING gin (groups);
CREATE INDEX IF NOT EXISTS answer_cache_expiry_idx ON answer_cache (expires_at);
CREATE INDEX IF NOT EXISTS answer_cache_tenant_idx ON answer_cache (tenant_id);

CREATE TABLE IF NOT EXISTS answer_cache_fence (
    tenant_id   text        NOT NULL,
    group_name  text        NOT NULL,                      -- '*': every scope of the tenant
    fenced_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, group_name)
);

-- the strict freshness check reads the newest change a scope can see
CREATE INDEX IF NOT EXISTS documents_tenant_updated_idx ON documents (tenant_id, updated_at);

ALTER TABLE answer_cache ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_cache FORCE ROW LEVEL SECURITY;
ALTER TABLE answer_cache_fence ENABLE ROW LEVEL SECURITY;
ALTER TABLE answer_cache_fence FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS scope_rw ON answer_cache;
CREATE POLICY scope_rw ON answer_cache FOR ALL TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true)
           AND cardinality(groups) > 0
           AND groups = string_to_array(current_setting('ragline.groups', true), ','))
    WITH CHECK (tenant_id = current_setting('ragline.tenant', true)
           AND cardinality(groups) > 0
           AND groups = string_to_array(current_setting('ragline.groups', true), ','));

DROP POLICY IF EXISTS tenant_read ON answer_cache_fence;
CREATE POLICY tenant_read ON answer_cache_fence FOR SELECT TO ragline_query
    USING (tenant_id = current_setting('ragline.tenant', true));

DROP POLICY IF EXISTS pipeline_all ON answer_cache;
CREATE POLICY pipeline_all ON answer_cache FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS pipeline_all ON answer_cache_fence;
CREATE POLICY pipeline_all ON answer_cache_fence FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);

REVOKE ALL ON answer_cache, answer_cache_fence FROM PUBLIC;
GRANT SELECT, INSERT ON answer_cache TO ragline_query;
GRANT UPDATE (response, size_bytes, document_ids, chunk_ids, embedding, mode, built_at,
              created_at, expires_at, last_hit_at, hits)
    ON answer_cache TO ragline_query;
GRANT SELECT ON answer_cache_fence TO ragline_query;
GRANT SELECT, INSERT, UPDATE, DELETE ON answer_cache, answer_cache_fence TO ragline_pipeline;
