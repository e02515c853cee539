"""The chaos harness's lost/duplicated check itself (tests/chaos/chaos_helpers.py).

A row id is unique by construction (the chunks primary key, the OpenSearch ``_id``), so a
check that counts rows against distinct ids can never see an effect applied twice under a
new id (fresh chunk ids, OpenSearch auto ids): it must count per natural key too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chaos.chaos_helpers import Snapshot, compare


def _snap(
    pg: list[tuple[str, str, int, str]], os_docs: list[tuple[str, str, int]], generation: int = 1
) -> Snapshot:
    """``pg``: (chunk_id, document_id, ordinal, level) rows; ``os_docs``: (chunk_id,
    document_id, ordinal) hits."""
    chunks: dict[str, tuple[Any, ...]] = {c: (d, o, lv, None, f"t{o}") for c, d, o, lv in pg}
    os_ids = {c: (d, f"t{o}") for c, d, o in os_docs}
    docs = {d for _, d, _, _ in pg}
    return Snapshot(
        documents={d: ("indexed", "h", generation, 2) for d in docs},
        chunks=chunks,
        vectors={},
        chunk_rows=len(pg),
        os_ids=os_ids,
        os_hits=len(os_docs),
        status=dict.fromkeys(docs, "indexed"),
        pg_positions=len({(d, lv, o) for _, d, o, lv in pg}),
        os_positions=len({(d, o) for _, d, o in os_docs}),
    )


BASE_PG = [("c1", "d", 0, "child"), ("c2", "d", 1, "child"), ("p1", "d", 0, "parent")]
BASE_OS = [("c1", "d", 0), ("c2", "d", 1)]


def test_identical_stores_are_neither_lost_nor_duplicated() -> None:
    base = _snap(BASE_PG, BASE_OS)
    figures = compare(base, _snap(BASE_PG, BASE_OS))
    assert (figures["lost"], figures["duplicated"]) == (0, 0)


def test_a_position_written_twice_under_a_fresh_id_is_duplicated() -> None:
    """The same child of the same document held twice in OpenSearch (an auto ``_id``
    write repeated after a lost acknowledgement): one hit more than positions."""
    base = _snap(BASE_PG, BASE_OS)
    # OpenSearch keyed by _source chunk_id: the second copy shares it, so only the
    # position count sees it
    got = replace(_snap(BASE_PG, BASE_OS), os_hits=3)
    figures = compare(base, got)
    assert figures["duplicated_os_docs"] == 1
    assert figures["duplicated"] == 1 and figures["lost"] == 0


def test_chunk_rows_doubled_under_new_ids_are_duplicated() -> None:
    """The indexer inserting a redelivered version's rows with fresh ids beside the first
    ones: both positions of the document held twice in Postgres."""
    base = _snap(BASE_PG, BASE_OS)
    doubled = [*BASE_PG, ("x1", "d", 0, "child"), ("x2", "d", 1, "child")]
    figures = compare(base, _snap(doubled, BASE_OS))
    assert figures["duplicated_rows"] == 2
    assert figures["duplicated"] >= 2


def test_a_version_applied_twice_is_duplicated() -> None:
    base = _snap(BASE_PG, BASE_OS)
    figures = compare(base, _snap(BASE_PG, BASE_OS, generation=2))
    assert figures["regenerated_documents"] == ["d"] and figures["duplicated"] == 1
