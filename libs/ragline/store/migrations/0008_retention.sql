-- 0008 retention (`ragline gc`, libs/ragline/ops/retention.py; docs/operations.md "Retention").
--
-- embedding_cache.last_used_at: when a vector was last served from the cache. The embedder
-- touches it on a hit only when it is more than a day old (one cheap UPDATE of the few
-- stale rows per batch, never a write per hit), so it is accurate to a day, which is all
-- an LRU cap and a 90-day "unused" rule need. Existing rows start at the migration time
-- (a constant default: no table rewrite) and age from there.

ALTER TABLE embedding_cache
    ADD COLUMN IF NOT EXISTS last_used_at timestamptz NOT NULL DEFAULT now();

-- oldest-first scans for the age rule and the LRU cap
CREATE INDEX IF NOT EXISTS embedding_cache_last_used_idx ON embedding_cache (last_used_at);
