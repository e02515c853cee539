-- Which document a claim-checked body belongs to, so that deleting or blocking the
-- document purges every stored raw body of it (issue 13; libs/ragline/runtime/claimcheck.py).
-- Additive: the previous release inserts rows without an owner, which `ragline gc` still
-- sweeps by age.
ALTER TABLE claim_checks ADD COLUMN IF NOT EXISTS tenant_id text;
ALTER TABLE claim_checks ADD COLUMN IF NOT EXISTS document_id text;
CREATE INDEX IF NOT EXISTS claim_checks_owner
    ON claim_checks (tenant_id, document_id) WHERE document_id IS NOT NULL;
