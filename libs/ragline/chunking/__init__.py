"""Structure-first chunking measured in the embedding model's own tokens (docs/chunking.md)."""

from ragline.chunking.chunker import Chunker, merge_flags
from ragline.chunking.config import ALGORITHM_VERSION, ChunkerSettings
from ragline.chunking.tokenizer import TokenCounter, load_token_counter

__all__ = [
    "ALGORITHM_VERSION",
    "Chunker",
    "ChunkerSettings",
    "TokenCounter",
    "load_token_counter",
    "merge_flags",
]
