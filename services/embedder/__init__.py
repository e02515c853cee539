"""The embedder service: thin wiring over libs/ragline."""
