-- 0130 the newest ACL statement intake accepted for a document (lifetest ACL-1,
-- docs/adr/0008, amendment "accepted ACL statements"): its ACL key (seq, rank: 0 an
-- upsert's ACL, 1 an ACL change) and digest (events.acl_digest of groups and
-- classification). Written only by the connector, in the batch's status writes, guarded by
-- the key; read by intake so that an upsert whose ACL differs from an accepted ACL change
-- still in flight is never dropped as "unchanged". Separate from acl_groups/acl_seq (what
-- the status row is read through), so it never blocks a status write. Additive: old
-- writers never touch it, old readers ignore it; NULL means "nothing recorded" (rows from
-- before this migration: intake then compares with the documents row, as before).
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS stated_acl_seq bigint;
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS stated_acl_rank smallint;
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS stated_acl_digest text;
