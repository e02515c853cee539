-- 0031 status 'awaiting_content' (issue 12, defect 8): an ACL change for a document never
-- seen is parked in pending_acl and visible as this status (to the groups it names)
-- until the content arrives.
--
-- contract: widening the status CHECK; the previous release only writes values the new check also allows, and never reads this value (its status endpoint passes the text through)
-- The replacement is NOT VALID (every existing row satisfies it anyway) so adding it
-- takes no long scan.
ALTER TABLE document_status DROP CONSTRAINT IF EXISTS document_status_status_check;
ALTER TABLE document_status ADD CONSTRAINT document_status_status_check
    CHECK (status IN ('accepted', 'indexed', 'quarantined', 'deleted', 'failed',
                      'awaiting_content')) NOT VALID;
