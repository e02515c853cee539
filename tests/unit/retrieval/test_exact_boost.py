"""The exact-identifier boost (retrieval/candidates.py ``exact_refuse``) lifts the
candidates that name the query's identifier as ``ident_match`` defines it: whole letter
and digit runs, any separators, NFKC case-folded; never a look-alike that merely contains
the identifier's characters."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.retrieval.candidates import exact_refuse
from ragline.retrieval.fusion import FusedHit, rrf
from ragline.retrieval.hydrate import ChunkRow
from ragline.retrieval.ident_match import matches, matches_any
from ragline.retrieval.settings import RankingSettings


def _row(cid: str, text: str) -> ChunkRow:
    return ChunkRow(
        chunk_id=cid, document_id=f"d-{cid}", parent_id=None, text=text, section_path=(),
        content_type="text", page_start=None, page_end=None, line_start=None, line_end=None,
        injection_suspect=False, pii_types=(), trust=None, version=None, series_id=None,
        effective_date=None, title=None, uri=None, similarity=None, embedding=None,
    )  # fmt: skip


# dense likes the decoy, BM25 the candidate under test: plain fusion puts the decoy first
_FUSED = rrf({"dense": ["decoy", "x", "cand"], "lexical": ["cand", "decoy", "x"]}, k=60)


def _boosted(ident: str, text: str, fusion: str = "rrf") -> bool:
    rows = {
        "decoy": _row("decoy", "nothing here"),
        "x": _row("x", "other"),
        "cand": _row("cand", text),
    }
    out = exact_refuse(_FUSED, rows, {ident}, RankingSettings(fusion=fusion))  # type: ignore[arg-type]
    assert _FUSED[0].key == "decoy"
    return out[0].key == "cand"


@pytest.mark.parametrize("fusion", ["rrf", "score"])
@pytest.mark.parametrize(
    ("ident", "text"),
    [
        ("ab-12", "ticket XAB-123 closed"),  # a raw substring finds ab-12 in xab-123
        ("ab-12", "see AB-123"),
        ("err-4711", "code ERR-47110 raised"),
        ("gen-2", "oxygen-2 levels"),
        ("c1698", "the C1698T variant"),
        ("kb-1", "the kb-10 article"),
    ],
)
def test_a_look_alike_is_not_boosted(ident: str, text: str, fusion: str) -> None:
    assert ident in text.lower()  # the old raw test matched every one of these
    assert not _boosted(ident, text, fusion)


@pytest.mark.parametrize("fusion", ["rrf", "score"])
@pytest.mark.parametrize(
    ("ident", "text"),
    [
        ("err-4711", "error ERR4711 raised"),  # the analyzer's split: ERR4711 is ERR-4711
        ("err-4711", "error err 4711 raised"),
        ("ifit1", "Interferon-induced IFIT-1 restricts"),
        ("sup-9999", "\uff33\uff35\uff30\uff0d\uff19\uff19\uff19\uff19 closed"),  # full width
        ("sup-9999", "SUP\u200b-9999"),  # a zero-width space is a separator
        ("m2-like", "an M2\u2010like phenotype"),  # U+2010 hyphen
        ("ﬁx-7", "apply FIX-7 now"),  # a ligature in the identifier: NFKC fi
        ("err-4711", "ERR-4711"),
    ],
)
def test_other_spellings_of_the_name_are_boosted(ident: str, text: str, fusion: str) -> None:
    assert _boosted(ident, text, fusion)


def test_identifiers_without_a_run_and_hostile_text_boost_nothing() -> None:
    assert not _boosted("--", "-- anything --")
    assert not _boosted("\x00", "\x00")
    assert not _boosted("\ud800", "a \ud800 b")
    assert _boosted("sup-9999", "\x00" + "a" * 100_000 + " SUP-9999 \ud800" + "\u200d" * 500)


def test_off_and_no_match_keep_the_fusion_order() -> None:
    rows = {k: _row(k, "ERR-4711") for k in ("decoy", "x", "cand")}
    off = exact_refuse(_FUSED, rows, {"err-4711"}, RankingSettings(weight_exact=0))
    assert off == _FUSED
    rows = {k: _row(k, "nothing") for k in ("decoy", "x", "cand")}
    assert exact_refuse(_FUSED, rows, {"err-4711"}, RankingSettings()) == _FUSED


def test_a_candidate_without_a_row_is_never_boosted() -> None:
    fused = [FusedHit(key="gone", score=1.0, ranks={"dense": 1}), *_FUSED]
    rows = {"decoy": _row("decoy", "no"), "x": _row("x", "no"), "cand": _row("cand", "ERR-4711")}
    out = exact_refuse(fused, rows, {"err-4711"}, RankingSettings())
    assert out[0].key == "cand"


@settings(max_examples=200, deadline=None)
@given(
    idents=st.lists(st.text(alphabet="abXY019-_.\u200b\uff21", max_size=8), max_size=3),
    text=st.text(alphabet="abcXYZ019-_. \u200b\uff21\uff11", max_size=40),
)
def test_matches_any_is_any_of_matches(idents: list[str], text: str) -> None:
    assert matches_any(idents, text) == any(matches(i, text) for i in idents)
