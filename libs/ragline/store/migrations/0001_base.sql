-- 0001 base: what every later migration relies on.
--
-- The query role (ragline_query: LOGIN, NOBYPASSRLS, owns nothing) is NOT created here:
-- the migration runner creates it from the settings before applying any file, so no
-- password ever lives in the repository (libs/ragline/store/query_role.py).

-- pgvector: the dense index (chunks.embedding) and the embedding cache
CREATE EXTENSION IF NOT EXISTS vector;

-- Nobody but the owner creates objects in public (the default since PostgreSQL 15; said
-- again for older external servers), so the query role can never come to own anything.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
