"""Settings validation and the strategy version."""

from __future__ import annotations

import pytest

from ragline.chunking import ChunkerSettings
from ragline.errors import ConfigError


def test_defaults_fit_the_model_with_header_and_special_tokens() -> None:
    s = ChunkerSettings()
    assert s.child_max_tokens + s.header_budget_tokens + 2 <= s.model_max_tokens == 256
    assert s.overlap_min <= s.overlap_target <= s.overlap_max
    assert s.overlap_min >= 0.10 * s.child_max_tokens - 1
    assert s.overlap_max <= 0.20 * s.child_max_tokens + 1


def test_a_child_budget_that_cannot_fit_the_model_is_refused() -> None:
    with pytest.raises(ConfigError, match="exceed model_max_tokens"):
        ChunkerSettings(child_max_tokens=230, header_budget_tokens=40)
    with pytest.raises(ConfigError, match="parent_max_tokens"):
        ChunkerSettings(parent_max_tokens=100)


def test_environment_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_CHUNKER_CHILD_MAX_TOKENS", "150")
    assert ChunkerSettings().child_max_tokens == 150


def test_strategy_version_follows_every_shaping_setting() -> None:
    base = ChunkerSettings().strategy_version
    assert base == ChunkerSettings().strategy_version
    assert base.startswith("2.")
    for change in (
        {"child_max_tokens": 180},
        {"overlap_ratio": 0.1},
        {"parent_max_tokens": 1200},
        {"table_header_max_tokens": 60},
    ):
        assert ChunkerSettings(**change).strategy_version != base  # type: ignore[arg-type]


def test_the_table_header_budget_is_at_most_half_a_child() -> None:
    assert ChunkerSettings().table_header_tokens == 100
    assert ChunkerSettings(table_header_max_tokens=60).table_header_tokens == 60
    small = ChunkerSettings(child_max_tokens=40, table_header_max_tokens=60)
    assert small.table_header_tokens == 20
