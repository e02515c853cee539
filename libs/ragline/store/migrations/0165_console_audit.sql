-- 0165 console audit: every mutating action of the operator console (and what the
-- console refused), one append-only row each: who (the admin token's subject), what,
-- on which tenant/target, with which outcome. Never document text or payloads.
--
-- Owner: console (libs/ragline/console/audit.py), written with the admin DSN (a member of
-- ragline_pipeline outside the local stack): it may insert and read, never update or
-- delete. The query role gets nothing.

CREATE TABLE IF NOT EXISTS console_audit (
    audit_id    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text        NOT NULL,
    action      text        NOT NULL,
    tenant_id   text,
    target      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    outcome     text        NOT NULL,
    detail      jsonb       NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX IF NOT EXISTS console_audit_at_idx ON console_audit (at);

ALTER TABLE console_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE console_audit FORCE ROW LEVEL SECURITY;
CREATE POLICY pipeline_read ON console_audit FOR SELECT TO ragline_pipeline USING (true);
CREATE POLICY pipeline_insert ON console_audit FOR INSERT TO ragline_pipeline WITH CHECK (true);
GRANT SELECT, INSERT ON console_audit TO ragline_pipeline;
