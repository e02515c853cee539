"""The query service: thin wiring over libs/ragline."""
