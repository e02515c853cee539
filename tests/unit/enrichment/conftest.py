"""Enrichment test fixtures: the real tokenizer (shared per process) and chunk builders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ragline.enrichment import Enricher, EnricherSettings
from ragline.events import Chunk, ChunkLevel
from ragline.hashing import chunk_id
from ragline.text import TokenCounter, load_token_counter


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return load_token_counter()


@pytest.fixture(scope="session")
def enricher(counter: TokenCounter) -> Enricher:
    return Enricher(counter, header_budget=40, settings=EnricherSettings())


@pytest.fixture(scope="session")
def make_chunk() -> Callable[..., Chunk]:
    def make(text: str, ordinal: int = 0, **kw: Any) -> Chunk:
        fields: dict[str, Any] = {
            "chunk_id": chunk_id("t:d", ordinal),
            "level": ChunkLevel.CHILD,
            "ordinal": ordinal,
            "text": text,
            "section_path": ("Guide", "Install"),
            "content_type": "text",
            "token_count": 10,
            "strategy": "structure-recursive",
            "strategy_version": "1.test",
        }
        fields.update(kw)
        return Chunk(**fields)

    return make
