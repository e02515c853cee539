"""ragline: keep retrieval indexes true to a company's documents."""

__version__ = "0.1.0"
