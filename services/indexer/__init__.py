"""The indexer service: thin wiring over libs/ragline."""
