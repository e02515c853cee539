"""The per-document cap choosing a document's chunks by retriever evidence (doc_cap.py).

Regression for issue 20 item 2 (golden_marine msh-06: lost under fusion although dense
ranks it 2nd): the legs below are that case's real lists from the query service (chunk
ids shortened; the dense list is its first 15 plus its last entry, which is all score
fusion's min-max normalisation reads)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ragline.retrieval.diversity import cap_per_document
from ragline.retrieval.doc_cap import cap_per_document_by_evidence
from ragline.retrieval.fusion import score_fusion

SDK = "code:tern-sdk/tern_sdk/nmea.py"
ANSWER = "e2f60d"  # holds "MAX_SENTENCE_LENGTH = 82"
LEXICAL = [
    ("25914b", SDK, 1.8467),
    ("736ea9", "docs:tern/5.4/operator-manual", 1.4782),
    ("3695ee", SDK, 1.4063),
    ("45abbb", SDK, 1.239),
    ("1cbdf4", "docs:tern/6.1/release-notes", 1.1564),
    ("3bcd63", "docs:tern/alarm-codes", 0.9751),
    ("8c6fa5", "docs:tern/6.1/release-notes", 0.8835),
    (ANSWER, SDK, 0.8556),
    ("f095fc", "docs:tern/5.4/operator-manual", 0.5747),
    ("227069", "docs:tern/parameter-reference", 0.4981),
    ("612e4d", "docs:tern/alarm-codes", 0.4785),
]
DENSE = [
    ("25914b", SDK, 0.4669),
    (ANSWER, SDK, 0.3535),
    ("e509ec", SDK, 0.3404),
    ("45abbb", SDK, 0.3008),
    ("19ec90", "docs:tern/6.0/release-notes", 0.253),
    ("fdc58a", "policy:standby-allowance/2024", 0.2457),
    ("0edff0", "policy:standby-allowance/2024", 0.2326),
    ("6e2b14", "wiki:sea-trials/2026", 0.2324),
    ("3695ee", SDK, 0.2275),
    ("06b176", "tickets:FS-1207", 0.1943),
    ("74fda7", "docs:tern/6.1/release-notes", 0.1902),
    ("046e01", "policy:standby-allowance/2024", 0.1724),
    ("ec78c1", "docs:tern/5.4/operator-manual", 0.1717),
    ("ed9dc0", "safety:lone-working", 0.1669),
    ("1cbdf4", "docs:tern/6.1/release-notes", 0.1668),
    ("f0b705", "docs:tern/5.4/operator-manual", -0.0435),
]
DOC = {c: d for c, d, _ in LEXICAL + DENSE}


def _fused() -> list[tuple[str, float]]:
    hits = score_fusion(
        {"dense": [(c, s) for c, _, s in DENSE], "lexical": [(c, s) for c, _, s in LEXICAL]}
    )
    return [(h.key, float(min(h.ranks.values()))) for h in hits]


def test_msh06_plain_cap_drops_the_answer() -> None:
    """The cause, pinned: the answer is 4th of its document in fused order, so a cap of 3
    drops it (this is what the service did before)."""
    fused = _fused()
    sdk_order = [c for c, _ in fused if DOC[c] == SDK]
    assert sdk_order.index(ANSWER) == 3
    top10 = cap_per_document(fused, lambda x: DOC[x[0]], 3)[:10]
    assert ANSWER not in [c for c, _ in top10]


def test_msh06_evidence_cap_keeps_the_answer() -> None:
    fused = _fused()
    top10 = cap_per_document_by_evidence(fused, lambda x: DOC[x[0]], lambda x: x[1], 3)[:10]
    ids = [c for c, _ in top10]
    assert ANSWER in ids
    assert sum(DOC[c] == SDK for c in ids) == 3  # still at most 3 of the module
    # the module ranks where the plain cap put it: documents in the same order
    plain = cap_per_document(fused, lambda x: DOC[x[0]], 3)[:10]
    assert [DOC[c] for c in ids] == [DOC[c] for c, _ in plain]


items_st = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c", "d"]),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5)),
    ),
    max_size=40,
)


@given(items_st, st.integers(1, 5))
def test_documents_keep_the_plain_caps_positions(items: list[tuple[str, float]], cap: int) -> None:
    out = cap_per_document_by_evidence(items, lambda x: x[0], lambda x: float(x[1]), cap)
    plain = cap_per_document(items, lambda x: x[0], cap)
    assert [d for d, _ in out] == [d for d, _ in plain]


@given(items_st, st.integers(1, 5))
def test_keeps_each_documents_strongest(items: list[tuple[str, float]], cap: int) -> None:
    indexed = list(enumerate(items))
    out = cap_per_document_by_evidence(indexed, lambda x: x[1][0], lambda x: float(x[1][1]), cap)
    assert len({i for i, _ in out}) == len(out)  # nothing repeated
    for doc in {d for d, _ in items}:
        mine = [(i, s) for i, (d, s) in indexed if d == doc]
        key = [(math.inf if s != s else s, i) for i, s in mine]
        want = sorted(i for _, i in sorted(key)[:cap])
        assert [i for i, (d, _) in out if d == doc] == want


@given(items_st, st.integers(1, 5))
def test_order_as_strength_is_the_plain_cap(items: list[tuple[str, float]], cap: int) -> None:
    indexed = list(enumerate(items))
    out = cap_per_document_by_evidence(indexed, lambda x: x[1][0], lambda x: float(x[0]), cap)
    assert out == cap_per_document(indexed, lambda x: x[1][0], cap)


def test_rejects_a_cap_below_one() -> None:
    import pytest

    with pytest.raises(ValueError):
        cap_per_document_by_evidence([1], str, float, 0)
