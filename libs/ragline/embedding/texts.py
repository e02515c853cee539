"""What gets embedded for a child chunk, and the cache key of that text."""

from __future__ import annotations

from ragline.events import Chunk
from ragline.hashing import sha256_hex

__all__ = ["embed_text", "text_key"]


def embed_text(chunk: Chunk) -> str:
    """The contextual header (document title, section path, ...) then the child text."""
    header = chunk.enrichment.contextual_header.strip() if chunk.enrichment else ""
    return f"{header}\n{chunk.text}" if header else chunk.text


def text_key(text: str) -> str:
    """sha256 of the exact embedded text (the model sees exactly these characters)."""
    return sha256_hex(text)
