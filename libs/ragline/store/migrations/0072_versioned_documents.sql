-- The release labels a caller can see (retrieval/versions.py: SELECT DISTINCT version, title
-- ... WHERE version IS NOT NULL AND status = 'indexed', under RLS) are read once per scope
-- and 30 s; with many distinct scopes that is close to once per query. Without an index the
-- read walks every document of the tenant; this partial index holds only the versioned,
-- indexed ones, which are few. Additive: the previous release never reads it.
CREATE INDEX IF NOT EXISTS documents_versioned_idx
    ON documents (tenant_id, version, title)
    WHERE version IS NOT NULL AND status = 'indexed';
