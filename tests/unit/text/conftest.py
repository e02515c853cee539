"""The real tokenizer, loaded once per session."""

from __future__ import annotations

import pytest

from ragline.text import TokenCounter, load_token_counter


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return load_token_counter()
