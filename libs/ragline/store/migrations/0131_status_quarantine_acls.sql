-- 0131 the ACL statements of quarantined versions newer than the indexed one (lifetest
-- ACL-3, docs/adr/0007 "a quarantine may overtake the older version"): a small log on
-- the status row, [[seq, content hash, [groups], classification], ...], oldest first,
-- written by the indexer under the document lock when it records a quarantine, pruned
-- when a version or a delete at least as new is applied, cleared by reset-seq. An older
-- version indexed after two or more newer versions were quarantined is narrowed by every
-- one of them (the status row's own ACL keeps only the newest statement). Additive: old
-- writers never touch it, old readers ignore it; NULL is the empty log.
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS quarantine_acls jsonb;
