"""The cache_invalidator service: thin wiring over libs/ragline."""
