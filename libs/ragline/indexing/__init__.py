"""Indexer: exactly-once effect of pipeline events into Postgres (truth) and OpenSearch."""
