"""Adaptive model batches (pure logic): idle work goes in one small call, a backlog in
large length-ordered calls, and the budget follows the measured model speed."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.embedding.adaptive import (
    MODEL_WINDOW,
    AdaptiveBatchSizer,
    BatchPolicy,
    batch_sizer,
    estimate_tokens,
    model_batch_size,
    plan_batches,
)
from ragline.embedding.batcher import BatchEmbedder
from ragline.embedding.settings import EmbedderSettings
from ragline.indexing.samples import enriched_event, pseudo_embedding


@given(
    st.lists(st.integers(min_value=-5, max_value=2**63), max_size=300),
    st.integers(min_value=1, max_value=70_000),
    st.integers(min_value=1, max_value=300),
)
def test_plan_is_a_partition_within_the_limits(
    lengths: list[int], budget: int, max_batch: int
) -> None:
    plan = plan_batches(lengths, token_budget=budget, max_batch=max_batch)
    flat = [i for batch in plan for i in batch]
    assert sorted(flat) == list(range(len(lengths)))  # every text exactly once
    clamp = [max(1, min(n, MODEL_WINDOW)) for n in lengths]
    for batch in plan:
        assert 1 <= len(batch) <= max_batch
        if len(batch) > 1:
            assert len(batch) * max(clamp[i] for i in batch) <= budget
    assert [clamp[i] for i in flat] == sorted(clamp[i] for i in flat)  # shortest first


def test_idle_work_is_one_call_of_exactly_its_texts() -> None:
    sizer = AdaptiveBatchSizer()
    assert sizer.plan([40, 12, 90]) == [[1, 0, 2]]
    assert sizer.plan([]) == []


def test_a_backlog_of_short_texts_fills_large_calls() -> None:
    sizer = AdaptiveBatchSizer(BatchPolicy(max_batch=256))
    sizer.observe(padded_tokens=64 * 100, seconds=0.05)  # fast model: 128k tokens/s
    plan = sizer.plan([30] * 1000)
    assert max(len(b) for b in plan) == 256
    assert len(plan) == math.ceil(1000 / 256)


def test_long_texts_get_fewer_per_call() -> None:
    sizer = AdaptiveBatchSizer(BatchPolicy(initial_budget=64 * 128))
    short = sizer.plan([32] * 200)
    long = sizer.plan([256] * 200)
    assert len(short[0]) == 200 and len(long[0]) == 32


def test_budget_follows_the_measured_speed() -> None:
    p = BatchPolicy(max_batch=256, target_s=0.5, initial_budget=8192)
    sizer = AdaptiveBatchSizer(p)
    assert sizer.token_budget == 8192
    for _ in range(20):
        sizer.observe(padded_tokens=10_000, seconds=2.0)  # 5k tokens/s: 2.5k per call
    assert sizer.token_budget == 2500
    for _ in range(20):
        sizer.observe(padded_tokens=10_000, seconds=1e-3)  # very fast: capped
    assert sizer.token_budget == p.max_batch * MODEL_WINDOW
    for _ in range(60):
        sizer.observe(padded_tokens=10_000, seconds=100.0)  # very slow: floored
    assert sizer.token_budget == p.min_budget


def test_tiny_or_broken_measurements_do_not_move_the_budget() -> None:
    sizer = AdaptiveBatchSizer(BatchPolicy(initial_budget=8192))
    sizer.observe(padded_tokens=12, seconds=0.2)  # an idle call: overhead, not speed
    sizer.observe(padded_tokens=10_000, seconds=0.0)
    sizer.observe(padded_tokens=10_000, seconds=float("nan"))
    sizer.observe(padded_tokens=-1, seconds=1.0)
    assert sizer.token_budget == 8192


def test_estimate_tokens_needs_no_tokenizer() -> None:
    assert estimate_tokens(10, "") == 12  # [CLS] + [SEP]
    assert estimate_tokens(10, "Title > Section") == 16
    assert estimate_tokens(10_000, "h" * 10_000) == MODEL_WINDOW
    assert estimate_tokens(-3, "") == 2


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError):
        plan_batches([1, 2], token_budget=100, max_batch=0)


def test_settings_switch_it_off() -> None:
    assert batch_sizer(EmbedderSettings(adaptive_batching=False)) is None
    on = EmbedderSettings(max_batch_size=128, batch_size=32)
    sizer = batch_sizer(on)
    assert sizer is not None and sizer.policy.max_batch == 128
    assert model_batch_size(on) == 128  # the backend never re-splits an adaptive call
    assert model_batch_size(EmbedderSettings(adaptive_batching=False, batch_size=32)) == 32


class LenModel:
    name = "len-model"
    revision = "r1"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([pseudo_embedding(t, self.dim) for t in texts], dtype=np.float32)


async def test_batcher_sends_length_ordered_calls_with_the_same_vectors() -> None:
    events = [
        enriched_event(
            tenant_id="acme",
            document_id=f"wiki:d{i}",
            source_seq=1,
            texts=[("word " * (1 + (i * 7 + j * 13) % 90)).strip() for j in range(4)],
            title=f"T{i}",
        )
        for i in range(40)
    ]
    fixed_model, adaptive_model = LenModel(), LenModel()
    fixed = await BatchEmbedder(fixed_model, cache=None, batch_size=16).embed_events(events)
    sizer = AdaptiveBatchSizer(BatchPolicy(max_batch=256))
    adaptive = await BatchEmbedder(adaptive_model, cache=None, sizer=sizer).embed_events(events)
    assert [r.model_dump() for r in fixed] == [r.model_dump() for r in adaptive]  # type: ignore[union-attr]
    assert len(adaptive_model.calls) < len(fixed_model.calls)
    flat = [t for call in adaptive_model.calls for t in call]
    sizes = [len(t.split()) for t in flat]
    assert sizes == sorted(sizes)  # one length order across every call
