"""The pure part of embedding spaces: recipes, truncation + normalization, the throttle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.embedding.backfill import BackfillStats, Throttle
from ragline.embedding.texts import embed_text
from ragline.errors import ConfigError
from ragline.events import Chunk, ChunkLevel, Enrichment
from ragline.store.space_model import Space, recipe_text, transform

_text = st.text(min_size=1, max_size=200)


@given(header=st.one_of(st.none(), st.text(max_size=80)), text=_text)
def test_header_recipe_is_the_event_paths_text(header: str | None, text: str) -> None:
    enr = Enrichment(language="en", content_type="text", contextual_header=header or "")
    chunk = Chunk(
        chunk_id="c" * 64,
        token_count=1,
        level=ChunkLevel.CHILD,
        ordinal=0,
        text=text,
        content_type="text",
        strategy="s",
        strategy_version="1",
        enrichment=enr,
    )
    assert recipe_text("header", header, text) == embed_text(chunk)
    assert recipe_text("plain", header, text) == text


def test_unknown_recipe_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        recipe_text("html", None, "x")


@settings(max_examples=50)
@given(
    st.lists(
        st.lists(st.floats(-10, 10, allow_nan=False, width=32), min_size=8, max_size=8),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 8),
)
def test_truncate_then_normalize(rows: list[list[float]], d: int) -> None:
    arr = np.asarray(rows, dtype=np.float32)
    out = transform(arr, d)
    assert out.shape == (len(rows), d) and out.dtype == np.float32
    for src, v in zip(arr, out, strict=True):
        n = np.linalg.norm(src[:d])
        if n > 1e-6:
            assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-4
            # same direction as the truncated source (what truncate_dim + normalize does)
            assert np.allclose(v, src[:d] / n, atol=1e-5)
        else:
            assert np.all(np.isfinite(v))  # a (near) zero vector: no NaN, no inf


def test_truncate_dim_bounds() -> None:
    with pytest.raises(ConfigError):
        transform(np.ones((1, 4), dtype=np.float32), 5)
    with pytest.raises(ConfigError):
        transform(np.ones((1, 4), dtype=np.float32), 0)


def test_query_vector_matches_sentence_transformers_truncation() -> None:
    rng = np.random.default_rng(7)
    full = rng.standard_normal(384).astype(np.float32)
    full /= np.linalg.norm(full)
    space = Space(
        space_id=2,
        name="t",
        model=None,
        revision=None,
        dim=256,
        truncate_dim=256,
        normalize=True,
        recipe="header",
        storage="space_vectors",
        state="shadow",
    )
    q = space.query_vector(full)
    assert q.shape == (256,)
    assert np.allclose(q, full[:256] / np.linalg.norm(full[:256]), atol=1e-6)


def test_throttle_keeps_the_average_rate() -> None:
    now = [0.0]
    t = Throttle(10.0, clock=lambda: now[0])
    assert t.delay(5) == pytest.approx(0.5)
    now[0] = 2.0  # slower than the rate: no wait
    assert t.delay(5) == 0.0
    assert Throttle(None).delay(1000) == 0.0
    with pytest.raises(ConfigError):
        Throttle(0)


def test_eta() -> None:
    st_ = BackfillStats(written=50, done=50, total=150, elapsed_s=10.0)
    assert st_.rate == 5.0 and st_.eta_s == 20.0
    assert BackfillStats(done=3, total=3).eta_s == 0.0
    assert BackfillStats(done=0, total=3).eta_s is None
