"""Chunking test fixtures: the real tokenizer, loaded once per session."""

from __future__ import annotations

import pytest

from ragline.chunking import Chunker, ChunkerSettings
from ragline.text import TokenCounter, load_token_counter


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return load_token_counter()


@pytest.fixture(scope="session")
def chunker_settings() -> ChunkerSettings:
    return ChunkerSettings()


@pytest.fixture(scope="session")
def chunker(chunker_settings: ChunkerSettings, counter: TokenCounter) -> Chunker:
    return Chunker(chunker_settings, counter)
