"""The third golden set (tests/golden_water, issue 37) stays truthful: it loads (every
snippet in its source, every required document readable by its user), covers the
categories, and every snippet lies inside one child chunk of the real parser and chunker."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from test_evaluation_golden import (
    test_snippets_survive_parsing_and_chunking as _snippets_in_one_child_chunk,
)

from ragline.evaluation.golden import load_golden

WATER = Path(__file__).resolve().parents[2] / "golden_water"


def test_loads_and_covers_every_category() -> None:
    ds = load_golden(WATER)
    per_cat = Counter(c.category for c in ds.cases)
    assert len(ds.cases) >= 50 and len(per_cat) == 12 and min(per_cat.values()) >= 3
    assert len({d.tenant for d in ds.documents}) == 2


def test_water_snippets_survive_parsing_and_chunking() -> None:
    _snippets_in_one_child_chunk(load_golden(WATER))
