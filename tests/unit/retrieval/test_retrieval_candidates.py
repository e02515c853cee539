"""Candidate post-processing without backends: series resolution for as-of searches,
the exact-identifier re-fusion, rerank ordering and its fallbacks."""

from __future__ import annotations

from datetime import date

import pytest

from ragline.retrieval.candidates import (
    Candidate,
    _exact_refuse,
    rerank_candidates,
    resolve_series,
)
from ragline.retrieval.fusion import rrf
from ragline.retrieval.hydrate import ChunkRow
from ragline.retrieval.rerank import RerankFailed
from ragline.retrieval.settings import RankingSettings
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
    refused = _exact_refuse(fused, rows, {"err-4711"}, RankingSettings())
    assert fused[0].key == "a" and refused[0].key == "target"
    off = _exact_refuse(fused, rows, {"err-4711"}, RankingSettings(weight_exact=0))
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


def test_fusion_by_document_credits_a_document_both_legs_found_through_other_chunks() -> None:
    """Document A: its first chunk is dense's best, its second BM25's second; B's one
    chunk is in both lists. Chunk by chunk, b1 (two legs) beats a1 and a2 (one each); by
    document, A holds both legs' near-top scores and leads, its chunks together, each
    carrying A's fused score, in their own fused order; an unhydrated chunk is dropped."""
    from ragline.retrieval.candidates import by_document, fuse
    from ragline.retrieval.dense import DenseHit
    from ragline.retrieval.lexical import LexicalHit

    dense = [("a1", 0.95), ("b1", 0.80), ("c1", 0.75), ("x1", 0.40)]
    lex = [("b1", 10.0), ("a2", 9.8), ("c2", 3.0), ("y1", 1.0)]
    dh = [DenseHit(chunk_id=c, similarity=s, rank=i) for i, (c, s) in enumerate(dense, 1)]
    lh = [LexicalHit(chunk_id=c, score=s, rank=i) for i, (c, s) in enumerate(lex, 1)]
    doc_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "c2": "C", "x1": "X"}  # no y1
    settings = RankingSettings(fusion_unit="document")
    chunked = fuse(dh, lh, settings)
    assert chunked[0].key == "b1"
    out = by_document(chunked, doc_of, dh, lh, settings)
    order = [h.key for h in out]
    a_chunks = [h.key for h in chunked if doc_of.get(h.key) == "A"]  # their fused order
    assert order[:3] == [*a_chunks, "b1"]
    assert "y1" not in order and len(order) == 6
    a_score = out[0].score
    assert out[1].score == a_score > out[2].score
    assert out[0].ranks == next(h.ranks for h in chunked if h.key == out[0].key)
