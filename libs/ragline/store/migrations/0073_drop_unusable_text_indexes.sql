-- Contract step for 0070 / 0071: their GIN indexes (trigram over chunk text for the
-- identifier lookup, full-text for the query-term lookup) cannot serve the query side.
-- The query role reads chunks under row-level security, and PostgreSQL evaluates the
-- policy's quals before any non-leakproof user qual: LIKE (textlike) and @@ (ts_match_vq)
-- are not leakproof, so the planner never uses an index for them under RLS (measured on
-- SciFact: sequential scans, EXPLAIN ANALYZE). They only cost writes. Nothing reads them
-- (0070/0071 were never read by a released query service either). docs/evaluation.md
-- "Session 2" has the measurement and what would serve these lookups instead.
-- contract: no released query service reads these indexes (0070/0071 are unreleased)
DROP INDEX IF EXISTS chunks_child_search_trgm;
DROP INDEX IF EXISTS chunks_child_terms;
