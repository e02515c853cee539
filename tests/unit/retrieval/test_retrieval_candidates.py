"""Candidate post-processing without backends: series resolution for as-of searches,
the exact-identifier re-fusion, rerank ordering and its fallbacks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import date

import pytest

from ragline.auth.principal import Principal
from ragline.errors import TransientError
from ragline.retrieval.candidates import (
    Candidate,
    _lexical,
    exact_refuse,
    rerank_candidates,
    resolve_series,
)
from ragline.retrieval.fusion import rrf
from ragline.retrieval.hydrate import ChunkRow
from ragline.retrieval.lexical import LexicalHit
from ragline.retrieval.rerank import RerankFailed
from ragline.retrieval.settings import RankingSettings
from ragline.retrieval.term_evidence import TermStats
from ragline.retrieval.timing import Timings


def _row(cid: str, text: str = "t", series: str | None = None, eff: date | None = None) -> ChunkRow:
    return ChunkRow(
        chunk_id=cid,
        document_id=f"d-{cid}",
        parent_id=None,
        text=text,
        section_path=(),
        content_type="text",
        page_start=None,
        page_end=None,
        line_start=None,
        line_end=None,
        injection_suspect=False,
        pii_types=(),
        trust=None,
        version=None,
        series_id=series,
        effective_date=eff,
        title=None,
        uri=None,
        similarity=None,
        embedding=None,
    )


def _cand(cid: str, **kw: object) -> Candidate:
    return Candidate(row=_row(cid, **kw), rrf=0.0)  # type: ignore[arg-type]


def test_resolve_series_keeps_version_in_force() -> None:
    cands = [
        _cand("v1", series="s", eff=date(2023, 1, 1)),
        _cand("v2", series="s", eff=date(2024, 1, 1)),
        _cand("v3", series="s", eff=date(2026, 1, 1)),  # not yet in force at as_of
        _cand("x"),
    ]
    kept = [c.row.chunk_id for c in resolve_series(cands, date(2024, 6, 1))]
    assert kept == ["v2", "x"]
    assert [c.row.chunk_id for c in resolve_series(cands, date(2023, 6, 1))] == ["v1", "x"]


def test_exact_identifier_refusion_lifts_the_verbatim_match() -> None:
    # dense likes the look-alikes; BM25 ranks the true match first
    fused = rrf({"dense": ["a", "b", "c", "target"], "lexical": ["target", "a", "b", "c"]}, k=60)
    rows = {k: _row(k, text=f"code ERR-47{i}0") for i, k in enumerate("abc")}
    rows["target"] = _row("target", text="long page ... ERR-4711 ... more")
    refused = exact_refuse(fused, rows, {"err-4711"}, RankingSettings())
    assert fused[0].key == "a" and refused[0].key == "target"
    off = exact_refuse(fused, rows, {"err-4711"}, RankingSettings(weight_exact=0))
    assert [h.key for h in off] == [h.key for h in fused]


class _Scorer:
    def __init__(self, scores: list[float] | None = None, fail: str | None = None) -> None:
        self.scores, self.fail = scores, fail

    async def score(self, query: str, texts: list[str], *, timeout_s: float) -> list[float]:
        if self.fail:
            raise RerankFailed(self.fail)
        assert self.scores is not None
        return self.scores[: len(texts)]


async def test_rerank_orders_head_and_keeps_tail() -> None:
    cands = [_cand(c) for c in "abcd"]
    out, why = await rerank_candidates(
        _Scorer([0.1, 0.9, 0.5]), "q", cands, top_n=3, timeout_s=1, timings=Timings()
    )
    assert why is None
    assert [c.row.chunk_id for c in out] == ["b", "c", "a", "d"]
    assert out[0].rerank == pytest.approx(0.9) and out[3].rerank is None


@pytest.mark.parametrize(
    "scorer, reason",
    [
        (None, "rerank_unavailable"),
        (_Scorer(fail="rerank_timeout"), "rerank_timeout"),
        (_Scorer([1.0]), "rerank_failed"),
    ],
)
async def test_rerank_fallbacks_keep_fusion_order(scorer: _Scorer | None, reason: str) -> None:
    cands = [_cand(c) for c in "abc"]
    out, why = await rerank_candidates(scorer, "q", cands, top_n=3, timeout_s=1, timings=Timings())
    assert why == reason
    assert [c.row.chunk_id for c in out] == ["a", "b", "c"]


class _Searcher:
    """The lexical leg's searcher (no index: the wiring is under test): answers ``hits``
    once ``release`` is set (at once when None), or raises ``fail``."""

    def __init__(
        self,
        hits: list[LexicalHit],
        release: asyncio.Event | None = None,
        fail: Exception | None = None,
    ) -> None:
        self.hits, self.release, self.fail = hits, release, fail

    async def search(self, *_a: object, **_k: object) -> list[LexicalHit]:
        if self.release is not None:
            await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return self.hits


_HIT = LexicalHit(chunk_id="c1", score=9.0, rank=1)
_STATS = TermStats(chunks=10, df={"fresh": 1, "head": 2}, top=frozenset({"fresh", "head"}))


async def _run(searcher: _Searcher, text: str, terms: object) -> tuple[object, float | None]:
    hits, _, coverage = await _lexical(
        searcher,  # type: ignore[arg-type]
        Principal(tenant="t", groups=("g",), subject="s"),
        text,
        [],
        limit=5,
        timeout_s=1.0,
        timings=Timings(),
        with_count=False,
        terms=terms,  # type: ignore[arg-type]
    )
    return hits, coverage


async def test_the_coverage_is_read_over_what_the_question_asks_about() -> None:
    """ "How long" asks for a duration: "long" is not a word the best hit must hold, so the
    coverage read before fusion gets the question without it (term_evidence.asked_about)."""
    seen: list[tuple[str, str | None]] = []

    async def terms(text: str, _preds: object, best: Awaitable[str | None]) -> TermStats:
        seen.append((text, await best))
        return _STATS

    hits, coverage = await _run(_Searcher([_HIT]), "How long is a heading fresh?", terms)
    assert hits == [_HIT]
    assert seen == [("How      is a heading fresh?", "c1")]
    assert coverage == 1.0


async def test_the_query_is_analysed_while_the_bm25_search_runs() -> None:
    """The reader starts before the search answers (its analysis needs no hit) and gets
    the best hit when it arrives: the search here waits until the reader has started."""
    started = asyncio.Event()

    async def terms(_text: str, _preds: object, best: Awaitable[str | None]) -> TermStats:
        started.set()
        assert await best == "c1"
        return _STATS

    async def release() -> None:
        await started.wait()  # never set if the reader started after the search
        searcher.release.set()  # type: ignore[union-attr]

    searcher = _Searcher([_HIT], release=asyncio.Event())
    task = asyncio.create_task(release())
    hits, coverage = await asyncio.wait_for(_run(searcher, "heading fresh", terms), 5.0)
    await task
    assert hits == [_HIT] and coverage == 1.0


@pytest.mark.parametrize("outcome", ["no hit", "search failed"])
async def test_without_a_best_hit_the_reader_is_stopped_and_coverage_unknown(
    outcome: str,
) -> None:
    waited = asyncio.Event()
    cancelled: list[bool] = []

    async def terms(_text: str, _preds: object, best: Awaitable[str | None]) -> TermStats:
        waited.set()
        try:
            await best
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return _STATS

    fail = TransientError("down") if outcome == "search failed" else None
    searcher = _Searcher([], release=asyncio.Event(), fail=fail)

    async def release() -> None:
        await waited.wait()
        searcher.release.set()  # type: ignore[union-attr]

    task = asyncio.create_task(release())
    hits, coverage = await asyncio.wait_for(_run(searcher, "heading fresh", terms), 5.0)
    await task
    await asyncio.sleep(0)
    assert coverage is None
    assert hits == ([] if fail is None else None)
    assert cancelled == [True]
