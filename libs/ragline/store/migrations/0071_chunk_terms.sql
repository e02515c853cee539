-- Query-term statistics for abstention (issue 21 defect 5, issue 20; the query side's
-- retrieval/term_stats.py): in how many of the caller's child chunks each (English-stemmed)
-- word of a query occurs. A full-text GIN index over the same text the identifier lookup
-- reads (title, contextual header, text) answers that from posting lists instead of
-- parsing every chunk per query.
--
-- Additive: the previous release never reads the index; the query side falls back to the
-- similarity threshold alone when the lookup fails or times out.
CREATE INDEX IF NOT EXISTS chunks_child_terms ON chunks USING gin (
    to_tsvector(
        'english'::regconfig,
        coalesce(title, '') || ' ' || coalesce(contextual_header, '') || ' ' || text
    )
) WHERE level = 'child';
