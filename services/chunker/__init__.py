"""The chunker service: thin wiring over libs/ragline."""
