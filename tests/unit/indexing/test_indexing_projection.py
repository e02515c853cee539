"""Pure projections: event -> documents row, chunk rows, OpenSearch sources."""

from __future__ import annotations

from datetime import date

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.events import ChunkLevel
from ragline.hashing import meta_hash
from ragline.indexing.outcome import Outcome, indexed_event
from ragline.indexing.projection import DocumentFields, chunk_rows, document_values, os_source
from ragline.indexing.samples import embedded_event, pseudo_embedding
from ragline.store.chunks import CHUNK_COLUMNS, OS_FIELDS
from ragline.store.documents import DOCUMENT_COLUMNS
from ragline.store.os_index import COPY_TARGETS, IDENT_FIELD, chunk_mapping

FIELDS = DocumentFields(
    acl_groups=("eng",),
    classification="confidential",
    acl_seq=9,
    acl_rank=1,
    generation=3,
    revision=7,
    superseded=True,
    superseded_by="wiki:new",
)


def _event():
    return embedded_event(
        tenant_id="acme",
        document_id="wiki:old",
        source_seq=4,
        texts=["one", "two", "three", "four", "five"],
        title="Old",
        acl_groups=("everyone",),
        version="1.2",
        series_id="s",
        supersedes=("wiki:older", "wiki:old"),
        effective_date=date(2024, 5, 1),
    )


def test_document_values_take_acl_from_fields_and_drop_self_supersession() -> None:
    ev = _event()
    values = document_values(ev, FIELDS)
    assert set(values) <= set(DOCUMENT_COLUMNS)
    assert values["acl_groups"] == ["eng"] and values["classification"] == "confidential"
    assert values["supersedes"] == ["wiki:older"]
    assert values["meta_hash"] == meta_hash(ev.meta)
    assert values["chunk_count"] == len(ev.chunks) == 7  # 2 parents + 5 children
    assert values["generation"] == 3 and values["revision"] == 7


def test_chunk_rows_denormalize_and_embed_children_only() -> None:
    ev = _event()
    rows = chunk_rows(ev, FIELDS)
    assert all(set(r) == set(CHUNK_COLUMNS) for r in rows)
    parents = [r for r in rows if r["level"] == ChunkLevel.PARENT.value]
    children = [r for r in rows if r["level"] == ChunkLevel.CHILD.value]
    assert len(parents) == 2 and len(children) == 5
    assert all(r["embedding"] is None and r["embedding_model"] is None for r in parents)
    for r in children:
        assert r["embedding"].dtype == np.float32 and r["embedding"].shape == (384,)
        assert abs(float(np.linalg.norm(r["embedding"])) - 1) < 1e-5
        assert r["embedding_model"] == "pseudo"
    for r in rows:
        assert r["acl_groups"] == ["eng"] and r["superseded"] is True
        assert r["version"] == "1.2" and r["effective_date"] == date(2024, 5, 1)
        assert r["generation"] == 3 and r["contextual_header"] == "Old"
        assert "contextual_header" not in r["metadata"]["enrichment"]


def test_os_source_matches_the_strict_mapping() -> None:
    rows = chunk_rows(_event(), FIELDS)
    mapped = set(chunk_mapping()["mappings"]["properties"]) - COPY_TARGETS
    for r in rows:
        src = os_source(r, 7)
        assert set(src) == mapped
        assert src["revision"] == 7
        assert src["effective_date"] == "2024-05-01"
        assert src["section_path"] == "Old"
        assert "embedding" not in src
    # one field list: the projection reads exactly what store.chunks selects, plus the
    # identifier text fetch_children adds (chunks.ident_text, filled by migration 0150)
    assert set(OS_FIELDS) <= set(CHUNK_COLUMNS)
    assert set(OS_FIELDS) == mapped - {"revision", IDENT_FIELD}
    assert os_source({**rows[0], "ident_text": " old 1 "}, 7)[IDENT_FIELD] == " old 1 "


def test_indexed_event_id_is_derived_from_the_input() -> None:
    ev = _event()
    outcome = Outcome(action="upsert", generation=2, chunk_count=7, touched=("wiki:old",))
    a = indexed_event(ev, outcome, source_event_at=None)
    b = indexed_event(ev, outcome, source_event_at=None)
    assert a.event_id == b.event_id != ev.event_id
    assert (a.generation, a.chunk_count, a.skipped) == (2, 7, False)
    assert Outcome.model_validate(outcome.to_json()) == outcome


@settings(max_examples=50)
@given(st.text(min_size=1, max_size=200))
def test_pseudo_embedding_is_deterministic_and_unit(text: str) -> None:
    v = pseudo_embedding(text)
    assert v == pseudo_embedding(text)
    assert abs(sum(x * x for x in v) - 1) < 1e-5
