"""Structure-first chunking measured in the embedding model's own tokens (docs/chunking.md)."""

from ragline.chunking.chunker import Chunker, merge_flags
from ragline.chunking.config import ALGORITHM_VERSION, ChunkerSettings

__all__ = [
    "ALGORITHM_VERSION",
    "Chunker",
    "ChunkerSettings",
    "merge_flags",
]
