-- Identifier specificity from an index instead of a scan (issue 20 review; the query side's
-- retrieval/specificity.py). In how many of the caller's documents an identifier occurs
-- verbatim (case-insensitive, in a child chunk's title, contextual header or text) was a
-- strpos() over every child chunk the caller can see, once per query naming an
-- identifier; with this trigram index the same substring test (LIKE '%ident%') reads only
-- the chunks that hold the identifier's trigrams.
--
-- Additive: the previous release never reads the index. pg_trgm is a trusted extension
-- (PostgreSQL 13+); where it cannot be created (no privilege, not installed) the
-- migration still succeeds without the index and the lookup stays a bounded scan.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
    RAISE NOTICE 'pg_trgm not available: identifier lookups scan chunks';
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        -- the expression must match retrieval/specificity.py's SEARCH_TEXT exactly
        EXECUTE $idx$
            CREATE INDEX IF NOT EXISTS chunks_child_search_trgm ON chunks USING gin (
                lower(coalesce(title, '') || ' ' || coalesce(contextual_header, '') || ' ' || text)
                gin_trgm_ops
            ) WHERE level = 'child'
        $idx$;
    END IF;
END
$$;
