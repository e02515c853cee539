-- 0020 query audit: one append-only row per search (owner: query service, issue 6).
--
-- What is recorded: who (tenant, subject, groups), when, the query's sha256 (and its text
-- only under RAGLINE_QUERY_AUDIT_STORE_QUERY=text), mode, filters, returned chunk and
-- document ids, cache state, abstention, degradations, latency. Never evidence text.
--
-- Append-only: the query role may only INSERT rows of its own tenant (RLS WITH CHECK);
-- nobody gets UPDATE/DELETE/TRUNCATE grants, and a trigger refuses updates and deletes
-- except inside query_audit_sweep(), the retention sweep run with the admin DSN
-- (`ragline query-audit sweep --retention-days N`).

CREATE TABLE IF NOT EXISTS query_audit (
    audit_id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT now(),
    tenant_id       text        NOT NULL,
    subject         text        NOT NULL,
    groups          text[]      NOT NULL,
    trace_id        text        NOT NULL,
    query_hash      text        NOT NULL,
    query_text      text,
    query_count     integer     NOT NULL DEFAULT 1,
    mode            text        NOT NULL,
    request         jsonb       NOT NULL DEFAULT '{}'::jsonb,  -- filters, top_k, switches
    chunk_ids       text[]      NOT NULL DEFAULT '{}',
    document_ids    text[]      NOT NULL DEFAULT '{}',
    cache           text        NOT NULL,
    abstained       boolean     NOT NULL DEFAULT false,
    abstain_reason  text,
    degraded        text[]      NOT NULL DEFAULT '{}',
    latency_ms      real
);

CREATE INDEX IF NOT EXISTS query_audit_at_idx ON query_audit (at);
CREATE INDEX IF NOT EXISTS query_audit_tenant_idx ON query_audit (tenant_id, at);

ALTER TABLE query_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE query_audit FORCE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS audit_insert ON query_audit;
CREATE POLICY audit_insert ON query_audit FOR INSERT TO ragline_query
    WITH CHECK (tenant_id = current_setting('ragline.tenant', true));
DROP POLICY IF EXISTS pipeline_all ON query_audit;
CREATE POLICY pipeline_all ON query_audit FOR ALL TO ragline_pipeline
    USING (true) WITH CHECK (true);

REVOKE ALL ON query_audit FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON query_audit FROM ragline_query;
GRANT INSERT ON query_audit TO ragline_query;

CREATE OR REPLACE FUNCTION query_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('ragline.audit_sweep', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'query_audit is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

DROP TRIGGER IF EXISTS query_audit_append_only ON query_audit;
CREATE TRIGGER query_audit_append_only BEFORE UPDATE OR DELETE ON query_audit
    FOR EACH ROW EXECUTE FUNCTION query_audit_append_only();
DROP TRIGGER IF EXISTS query_audit_no_truncate ON query_audit;
CREATE TRIGGER query_audit_no_truncate BEFORE TRUNCATE ON query_audit
    FOR EACH STATEMENT EXECUTE FUNCTION query_audit_append_only();

-- the retention sweep: deletes rows older than the retention, returns how many
CREATE OR REPLACE FUNCTION query_audit_sweep(retention_days integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF retention_days IS NULL OR retention_days < 1 THEN
        RAISE EXCEPTION 'retention_days must be >= 1';
    END IF;
    PERFORM set_config('ragline.audit_sweep', 'on', true);
    DELETE FROM query_audit WHERE at < now() - make_interval(days => retention_days);
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM set_config('ragline.audit_sweep', 'off', true);
    RETURN n;
END
$$;
REVOKE ALL ON FUNCTION query_audit_sweep(integer) FROM PUBLIC;
