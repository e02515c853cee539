"""The ONNX Runtime backend: the default model's graph built without torch once per
session (conftest.py), its output contract, caching, checksums and selection. Its
vectors against sentence-transformers': test_onnx_reference.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragline.cache.version import configured_index_version
from ragline.config import EmbeddingModelSettings
from ragline.embedding.model import (
    backend_of,
    default_model_path,
    load_embedder,
    model_revision,
)
from ragline.embedding.onnx_backend import (
    BATCH_INDEPENDENCE_ATOL,
    BUILDER,
    ONNX_FILES,
    OnnxEmbedder,
    artifact_revision,
    export_onnx,
)
from ragline.embedding.settings import EmbedderSettings
from ragline.errors import ConfigError

TEXTS = [
    "Vitamin D deficiency is associated with increased risk of fractures.",
    "Kafka consumer groups rebalance when a member leaves.",
    "",  # empty child text (header-only chunks exist)
    "NUL\x00byte and zero\u200bwidth\u200djoiner and \ufeffBOM",
    "émojis 🧬🧪 and CJK 检索增强生成 and RTL עברית",
    "word " * 600,  # far beyond 256 word pieces: truncated the same way by both
    "a",
]


def test_identity_carries_the_artifact_checksum(
    fp32: OnnxEmbedder, int8: OnnxEmbedder, int8_dynamic: OnnxEmbedder
) -> None:
    base = model_revision(Path(default_model_path()))
    assert fp32.revision == f"{base}+onnx.{fp32.sha256[:16]}"
    assert int8.revision == f"{base}+int8s.{int8.sha256[:16]}"  # never mixed in the cache
    # the previous default keeps its revision: its cached vectors stay its own
    assert int8_dynamic.revision == f"{base}+int8.{int8_dynamic.sha256[:16]}"
    assert len({fp32.sha256, int8.sha256, int8_dynamic.sha256}) == 3 and len(int8.sha256) == 64
    assert artifact_revision(base, "int8", int8.sha256) == int8.revision
    assert backend_of(int8) == "onnx-int8-static" and backend_of(fp32) == "onnx"
    assert backend_of(int8_dynamic) == "onnx-int8"  # the default stays the dynamic one
    got = int8.encode(TEXTS)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_pretokenized_input_is_the_same_embedding(fp32: OnnxEmbedder) -> None:
    ids = fp32.tokenize(TEXTS)
    assert max(len(r) for r in ids) == fp32.max_length == 256
    np.testing.assert_allclose(fp32.encode_ids(ids), fp32.encode(TEXTS), atol=1e-6)
    assert fp32.encode([]).shape == (0, 384)


def test_lone_surrogates_read_as_replacement_characters(fp32: OnnxEmbedder) -> None:
    """No UTF-8 form: the tokenizer would raise TypeError and fail the whole batch."""
    got = fp32.encode(["half a pair \ud800 here", "a real pair \U0001f9ec"])
    want = fp32.encode(["half a pair \ufffd here", "a real pair \U0001f9ec"])
    np.testing.assert_allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("variant", ["fp32", "int8"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.text(max_size=60), min_size=1, max_size=9))
def test_rows_do_not_depend_on_batch_neighbours(
    variant: str, texts: list[str], request: pytest.FixtureRequest
) -> None:
    """Sorting by length, padding and sub-batching never leak between rows, for the
    int8 model too (static scales: no per-batch range; test_batch_independence.py)."""
    model: OnnxEmbedder = request.getfixturevalue(variant)
    together = model.encode(texts)
    alone = np.concatenate([model.encode([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=BATCH_INDEPENDENCE_ATOL)


def test_int8_vector_is_the_same_in_any_batch(int8: OnnxEmbedder) -> None:
    """The counter-example that found it: a short text next to a long one (the long
    row's activations set the batch's quantization range)."""
    short = "The gateway rejects requests with error AGW-4031 when the token expired."
    long = "Microstructural development of human newborn cerebral white matter. " * 12
    alone = int8.encode([short])[0]
    for neighbours in ([long], [long, "a", TEXTS[4]], TEXTS):
        row = int8.encode([*neighbours, short])[-1]
        np.testing.assert_allclose(row, alone, atol=BATCH_INDEPENDENCE_ATOL)


def test_export_is_cached_and_atomic(onnx_dir: Path, fp32: OnnxEmbedder) -> None:
    model_dir = Path(default_model_path())
    rev = model_revision(model_dir)
    path = onnx_dir / f"{rev}-{BUILDER}" / ONNX_FILES["fp32"]
    before = path.stat().st_mtime_ns
    assert export_onnx(model_dir, onnx_dir, rev, int8=False) == path
    assert path.stat().st_mtime_ns == before  # not exported again
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no temp left
    assert path.stat().st_mode & 0o044 == 0o044  # readable by the service user of an image


def test_unloadable_recorded_file_is_a_config_error(tmp_path: Path) -> None:
    """A file that matches its record but is no ONNX graph: refused, never half-loaded."""
    from ragline.text.model_files import file_sha256

    rev = model_revision(Path(default_model_path()))
    out = tmp_path / f"{rev}-{BUILDER}"
    out.mkdir()
    bad = out / ONNX_FILES["fp32"]
    bad.write_bytes(b"\x00not onnx")
    (out / f"{bad.name}.sha256").write_text(f"{file_sha256(bad)}  {bad.name}\n")
    with pytest.raises(ConfigError, match="rebuild"):
        OnnxEmbedder(onnx_dir=tmp_path)


def test_backend_selection(fp32: OnnxEmbedder, onnx_dir: Path, monkeypatch) -> None:
    assert EmbedderSettings().backend == "onnx-int8"  # the measured fastest (benchmarks.md)
    monkeypatch.setenv("RAGLINE_EMBEDDER_BACKEND", "onnx")
    monkeypatch.setenv("RAGLINE_EMBEDDER_ONNX_DIR", str(onnx_dir))
    cfg = EmbedderSettings()
    model = load_embedder(cfg)
    assert isinstance(model, OnnxEmbedder) and backend_of(model) == "onnx"
    assert model.path == fp32.path
    monkeypatch.setenv("RAGLINE_EMBEDDER_BACKEND", "tensorrt")
    with pytest.raises(ValidationError):
        EmbedderSettings()


def test_onnx_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cpu"):
        load_embedder(EmbedderSettings(backend="onnx", device="cuda"))
    with pytest.raises(ConfigError, match="local model directory"):
        load_embedder(EmbedderSettings(backend="onnx-int8", model="org/some-hub-name"))
    cls_pooled = tmp_path / "cls-model"
    shutil.copytree(default_model_path(), cls_pooled)
    conf = cls_pooled / "1_Pooling" / "config.json"
    pooling = json.loads(conf.read_text())
    conf.write_text(
        json.dumps({**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True})
    )
    with pytest.raises(ConfigError, match="mean Pooling"):
        OnnxEmbedder(str(cls_pooled), onnx_dir=tmp_path / "out")


def test_query_cache_version_follows_the_backend(
    int8: OnnxEmbedder, int8_dynamic: OnnxEmbedder
) -> None:
    as_int8 = EmbeddingModelSettings(model=None, backend="onnx-int8")  # dynamic: the default
    want = f"{int8_dynamic.name}@{int8_dynamic.revision}#1"
    assert configured_index_version(None, as_int8) == want
    as_static = EmbeddingModelSettings(model=None, backend="onnx-int8-static")
    assert configured_index_version(None, as_static) == f"{int8.name}@{int8.revision}#1"
    fp32 = EmbeddingModelSettings(model=None, backend="onnx")
    assert "+int8" not in configured_index_version(None, fp32)


@pytest.fixture(autouse=True)
def _clean_backend_env(monkeypatch) -> Iterator[None]:
    monkeypatch.delenv("RAGLINE_EMBEDDER_BACKEND", raising=False)
    yield


def test_no_cpu_memory_arena(fp32: OnnxEmbedder) -> None:
    """Issue 18: ONNX Runtime's CPU arena keeps its high-water mark for the life of the
    embedder (a large document: GBs never given back); without it memory is returned."""
    assert fp32._session.get_session_options().enable_cpu_mem_arena is False
