-- 0090 the document's reset generation (lifetest F14, docs/adr/0008, "Amendment 2026-12-01").
-- `ragline documents reset-seq` increments it in the transaction that lowers the seqs;
-- the connector stamps it on every change it accepts (the envelope's `seq_epoch`), and
-- the indexer refuses an event stamped with a lower one (stale: accepted before the
-- reset, e.g. a downstream or DLQ replay). Additive: old writers never touch it, old
-- readers ignore it, and every row starts in generation 0 (what old events carry).
ALTER TABLE document_status ADD COLUMN IF NOT EXISTS seq_epoch bigint NOT NULL DEFAULT 0;
