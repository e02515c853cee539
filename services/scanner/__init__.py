"""The scanner service: thin wiring over libs/ragline."""
