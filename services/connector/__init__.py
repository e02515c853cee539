"""The connector service: thin wiring over libs/ragline."""
