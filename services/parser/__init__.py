"""The parser service: thin wiring over libs/ragline."""
