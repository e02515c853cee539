-- 0006 pipeline grants: table privileges for members of ragline_pipeline (a pipeline
-- login that is not the tables' owner). Row access comes from the `pipeline_all`
-- policies of 0003-0005; the query role gets nothing here.

GRANT SELECT, INSERT, UPDATE, DELETE
    ON documents, document_status, chunks, pending_acl, processed_events, embedding_cache
    TO ragline_pipeline;
