"""``scores.fused`` is what ``scores.rrf`` carried (not always RRF); ``rrf`` stays, with
the same value and marked deprecated, for one release: both directions of an upgrade
parse."""

from __future__ import annotations

from ragline.config import EmbeddingModelSettings, Settings
from ragline.retrieval.settings import QuerySettings
from ragline_client.models import Scores
from services.query.api import create_app


def test_a_new_server_sends_both_names_and_an_old_one_still_parses() -> None:
    new = Scores(fused=0.044).model_dump(mode="json")
    assert new["fused"] == new["rrf"] == 0.044
    old = Scores.model_validate({"bm25_rank": 1, "rrf": 0.03})
    assert old.fused == 0.03
    assert Scores().model_dump()["fused"] is None and Scores().model_dump()["rrf"] is None


def test_the_openapi_document_marks_rrf_deprecated() -> None:
    qs = QuerySettings.from_fields(jwt_secret="openapi-test-secret-0123456789abcdef")
    spec = create_app(Settings(), qs, model=EmbeddingModelSettings()).openapi()
    props = spec["components"]["schemas"]["Scores"]["properties"]
    assert props["rrf"].get("deprecated") is True and "fused" in props
    assert not props["fused"].get("deprecated")
