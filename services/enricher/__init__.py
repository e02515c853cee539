"""The enricher service: thin wiring over libs/ragline."""
