-- Claim check: message bodies larger than the broker's limit are stored here by content
-- hash and the Kafka message carries only the key (see libs/ragline/runtime/claimcheck.py).
CREATE TABLE IF NOT EXISTS claim_checks (
    key         text PRIMARY KEY,          -- sha256 of the body
    body        bytea NOT NULL,
    size_bytes  integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS claim_checks_created_at ON claim_checks (created_at);
-- the query role never reads pipeline payloads
REVOKE ALL ON claim_checks FROM PUBLIC;
