"""Candidate post-processing without backends: series resolution for as-of searches,
the exact-identifier re-fusion, rerank ordering and its fallbacks."""

from __future__ import annotations

from datetime import date

import pytest

from ragline.auth.principal import Principal
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


class _OneHit:
    """The lexical leg's searcher, answering one hit (no index: the wiring is under test)."""

    async def search(self, *_a: object, **_k: object) -> list[LexicalHit]:
        return [LexicalHit(chunk_id="c1", score=9.0, rank=1)]


async def test_the_coverage_is_read_over_what_the_question_asks_about() -> None:
    """ "How long" asks for a duration: "long" is not a word the best hit must hold, so the
    coverage read before fusion gets the question without it (term_evidence.asked_about)."""
    seen: list[str] = []

    async def terms(text: str, _preds: object, top: str) -> TermStats:
        seen.append(text)
        return TermStats(chunks=10, df={"fresh": 1, "head": 2}, top=frozenset({"fresh", "head"}))

    hits, _, coverage = await _lexical(
        _OneHit(),  # type: ignore[arg-type]
        Principal(tenant="t", groups=("g",), subject="s"),
        "How long is a heading fresh?",
        [],
        limit=5,
        timeout_s=1.0,
        timings=Timings(),
        with_count=False,
        terms=terms,
    )
    assert hits is not None and [h.chunk_id for h in hits] == ["c1"]
    assert seen == ["How      is a heading fresh?"]
    assert coverage == 1.0
