"""Codec, settings and the kill switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from ragline.cache.codec import decode_response, encode_response
from ragline.cache.result_cache import PgResultCache, answer_cache_factory
from ragline.cache.settings import CacheSettings
from ragline.config import EmbeddingModelSettings
from ragline.retrieval.api_models import (
    Citation,
    Flags,
    Result,
    Scores,
    SearchResponse,
    VersionScope,
)
from ragline.retrieval.cache_seam import NoCache
from ragline.retrieval.settings import QuerySettings


def response(*docs: str) -> SearchResponse:
    return SearchResponse(
        results=[
            Result(
                chunk_id=f"c{i}",
                document_id=d,
                text=f"text {i}",
                scores=Scores(rrf=0.1),
                citation=Citation(title="t"),
                flags=Flags(),
            )
            for i, d in enumerate(docs)
        ],
        abstained=False,
        version_scope=VersionScope(mode="current", note="current versions"),
        timings_ms={"total": 12.5},
        cache="miss",
        trace_id="abc",
    )


def test_codec_round_trip_drops_per_request_fields_and_collects_dependencies() -> None:
    r = response("d1", "d2", "d1")
    enc = encode_response(r)
    assert enc.document_ids == ("d1", "d2")
    assert enc.chunk_ids == ("c0", "c1", "c2")
    back = decode_response(enc.blob)
    assert back.results == r.results
    assert back.trace_id == "" and back.timings_ms == {}
    assert b"text 0" not in enc.blob  # compressed, not plain JSON


def test_kill_switch_gives_no_cache(tmp_path: Path) -> None:
    """The query service's factory (the one way a cache is built)."""
    pool = cast(Any, object())
    qs, model = QuerySettings(), EmbeddingModelSettings()
    off = answer_cache_factory(CacheSettings(enabled=False), qs, model)(pool)
    assert isinstance(off, NoCache) and off.state == "off"
    (tmp_path / "config.json").write_text("{}")  # a model directory: versioned by content
    # (the torch backend's rule, the weights' revision: an ONNX backend's revision also
    # carries its built artifact's checksum, and this directory holds no weights to build)
    model = EmbeddingModelSettings(backend="torch")
    on = answer_cache_factory(CacheSettings(enabled=True), qs, model, model_path=tmp_path)(pool)
    assert isinstance(on, PgResultCache) and on.state == "on"
    assert on.index_version.startswith(f"{tmp_path.name}@")


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLINE_CACHE_SIMILARITY_THRESHOLD", "0.95")
    monkeypatch.setenv("RAGLINE_CACHE_FRESHNESS", "dependents")
    s = CacheSettings()
    assert s.similarity_threshold == 0.95 and s.freshness == "dependents"
    monkeypatch.setenv("RAGLINE_CACHE_SIMILARITY_THRESHOLD", "0.2")
    with pytest.raises(ValueError):
        CacheSettings()


def test_factory_keys_entries_by_model_epoch_and_ranking_settings(tmp_path: Any) -> None:
    from ragline.cache.result_cache import answer_cache_factory
    from ragline.config import EmbeddingModelSettings
    from ragline.retrieval.settings import QuerySettings

    pool = cast(Any, object())
    model = tmp_path / "my-model"  # not a directory: the name is the location, unversioned
    cs = CacheSettings(index_epoch="3")

    def version(qs: QuerySettings) -> str:
        cache = answer_cache_factory(cs, qs, EmbeddingModelSettings(), model_path=model)(pool)
        assert isinstance(cache, PgResultCache)
        return cache.index_version

    base = version(QuerySettings())
    assert base == f"{model}@unversioned#3+r{QuerySettings().ranking.fingerprint()}"
    assert (
        version(QuerySettings.from_fields(rrf_k=20)) != base
    )  # retuned ranking: old entries orphaned
    assert version(QuerySettings.from_fields(pool_max_size=40)) == base
