"""Batch independence (issue 35): a text's vector is the same embedded alone or inside
batches of texts of other lengths in any order, within ``BATCH_INDEPENDENCE_ATOL`` (the
bound vector comparisons use). The static int8 variant and fp32 hold it while batching
(length-bucketed calls); the per-batch dynamic quantization does not, which the same
check flags: that variant (the default ``onnx-int8``) only holds it one text per call,
run one after another or several at once on their own threads (``parallel``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragline.embedding.onnx_backend import (
    BATCH_INDEPENDENCE_ATOL,
    OnnxEmbedder,
    batch_dependence,
    length_buckets,
)
from ragline.embedding.settings import EmbedderSettings, usable_cpus


@pytest.mark.parametrize("variant", ["int8", "fp32"])
def test_batched_vectors_equal_alone(
    variant: str, onnx_dir: Path, int8: OnnxEmbedder, mixed_texts: list[str]
) -> None:
    model = OnnxEmbedder(onnx_dir=onnx_dir, variant=variant, batch_size=4)
    assert not model._rows_alone  # really batched: several texts per ONNX call
    assert batch_dependence(model, mixed_texts) <= BATCH_INDEPENDENCE_ATOL


@pytest.mark.parametrize("variant", ["int8-dynamic", "int8-fused"])
def test_check_flags_per_batch_dynamic_quantization(
    variant: str, onnx_dir: Path, mixed_texts: list[str], request: pytest.FixtureRequest
) -> None:
    """The same check on the dynamic variants made to batch: vectors move with their
    neighbours far beyond the bound; run one text per call (their default) they pass,
    one after another and (``int8_fused``: two) at once."""
    batched = OnnxEmbedder(onnx_dir=onnx_dir, variant=variant, batch_size=4, rows_alone=False)
    assert batch_dependence(batched, mixed_texts) > 100 * BATCH_INDEPENDENCE_ATOL
    alone: OnnxEmbedder = request.getfixturevalue(variant.replace("-", "_"))
    assert alone._rows_alone
    assert batch_dependence(alone, mixed_texts) <= BATCH_INDEPENDENCE_ATOL


def test_texts_at_once_equal_alone_and_one_after_another(
    int8_dynamic: OnnxEmbedder,
    onnx_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    mixed_texts: list[str],
) -> None:
    """The default variant with texts run concurrently (each alone in its call, one core
    each): every vector within the bound of the text alone, in every order and next to
    every neighbour, and of the same texts run one after another by today's session."""
    model = OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic", batch_size=4, parallel=3)
    assert batch_dependence(model, mixed_texts) <= BATCH_INDEPENDENCE_ATOL
    rows: list[int] = []
    lock = threading.Lock()
    meet = threading.Barrier(2, timeout=30)  # the first two calls must overlap
    run = model._run

    def spy(batch: list[Sequence[int]]) -> np.ndarray:
        with lock:
            rows.append(len(batch))
            first_two = len(rows) <= 2
        if first_two:
            meet.wait()
        return run(batch)

    monkeypatch.setattr(model, "_run", spy)
    got = model.encode(mixed_texts)
    assert rows == [1] * len(mixed_texts)  # each text alone in its ONNX call
    assert float(np.abs(got - int8_dynamic.encode(mixed_texts)).max()) <= BATCH_INDEPENDENCE_ATOL


def test_length_buckets_bound_rows_and_padded_size() -> None:
    lengths = [200, 5, 64, 64, 7, 256, 30, 64, 120]
    calls = length_buckets(lengths, max_rows=3, max_tokens=300)
    assert sorted(i for c in calls for i in c) == list(range(len(lengths)))  # each once
    for call in calls:
        width = max(lengths[i] for i in call)
        assert len(call) <= 3 and (len(call) == 1 or len(call) * width <= 300)
    flat = [lengths[i] for c in calls for i in c]
    assert flat == sorted(flat)  # neighbours of similar length share a call
    assert length_buckets(lengths, max_rows=1, max_tokens=10_000) == [
        [i] for i in sorted(range(9), key=lambda i: (lengths[i], i))
    ]


def test_texts_at_once_default_fills_the_usable_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """One text per usable CPU by default, fewer when each call has several intra-op
    threads, never below one; an explicit ``parallel`` wins."""
    monkeypatch.setattr("ragline.embedding.settings.usable_cpus", lambda: 4)
    for name in ("RAGLINE_EMBEDDER_THREADS", "RAGLINE_EMBEDDER_PARALLEL"):
        monkeypatch.delenv(name, raising=False)
    assert EmbedderSettings().texts_at_once() == 4
    assert EmbedderSettings(threads=2).texts_at_once() == 2
    assert EmbedderSettings(threads=8).texts_at_once() == 1
    assert EmbedderSettings(threads=2, parallel=3).texts_at_once() == 3


def test_usable_cpus_capped_by_the_container_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(16)))
    assert usable_cpus(tmp_path) == 16  # no cgroup files: the affinity
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(tmp_path) == 16  # no quota
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert usable_cpus(tmp_path) == 2  # a 1.5-CPU limit, rounded up
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("400000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(tmp_path) == 4  # cgroup v1


def test_intra_op_threads_follow_the_cpus_this_process_may_use(
    int8_dynamic: OnnxEmbedder, onnx_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One text at a time runs on the usable CPUs (affinity, container limit), not on
    ONNX Runtime's count of the host's cores: pinned to one core, its default ran two
    spinning threads there at 2x the CPU per chunk (docs/benchmarks.md, issue 35)."""
    monkeypatch.setattr("ragline.embedding.onnx_backend.usable_cpus", lambda: 1)
    one = OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic", batch_size=4)
    assert one.intra_op_threads == 1
    monkeypatch.setattr("ragline.embedding.onnx_backend.usable_cpus", lambda: 3)
    assert OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic").intra_op_threads == 3
    at_once = OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic", parallel=3)
    assert at_once.intra_op_threads == 1  # each text on one core
    assert OnnxEmbedder(onnx_dir=onnx_dir, variant="int8-dynamic", threads=2).intra_op_threads == 2
    texts = ["a pinned service", "the same vectors"]
    gap = float(np.abs(one.encode(texts) - int8_dynamic.encode(texts)).max())
    assert gap <= BATCH_INDEPENDENCE_ATOL  # the same vectors on one thread
