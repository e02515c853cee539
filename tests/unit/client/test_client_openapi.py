"""The query service's OpenAPI document and the client agree.

Every response the server declares for a ``/v1`` route is a schema the client has a
model for (one definition: the server's models ARE the client's), and every instance of
that schema, generated from the OpenAPI document itself, parses with the client model.
A route or response model added on the server side without a client model fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema_strategy import from_schema
from pydantic import BaseModel

import ragline_client
from ragline.config import EmbeddingModelSettings, Settings
from ragline.events import Classification
from ragline.retrieval import api_models, filters
from ragline.retrieval.settings import QuerySettings
from ragline_client import models
from services.query.api import create_app

_REF = "#/components/schemas/"


def _spec() -> dict[str, Any]:
    qs = QuerySettings.from_fields(jwt_secret="openapi-test-secret-0123456789abcdef")
    app = create_app(Settings(), qs, model=EmbeddingModelSettings())
    return app.openapi()


SPEC = _spec()


def _declared() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    out = []
    for path, ops in SPEC["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, op in ops.items():
            for status, resp in op.get("responses", {}).items():
                for ctype, content in resp.get("content", {}).items():
                    out.append((path, method, status, ctype, content.get("schema", {})))
    return out


DECLARED = _declared()


def _model_for(schema: dict[str, Any]) -> type[BaseModel]:
    ref = schema.get("$ref", "")
    assert ref.startswith(_REF), f"inline response schema, no client model: {schema}"
    name = ref.removeprefix(_REF)
    model = getattr(models, name, None)
    assert isinstance(model, type) and issubclass(model, BaseModel), (
        f"the server declares {name}, ragline_client.models has no such model"
    )
    return model


def test_every_v1_route_declares_its_responses() -> None:
    ops = {(p, m) for p, m, *_ in DECLARED}
    assert ("/v1/search", "post") in ops
    assert ("/v1/documents/{document_id}", "get") in ops
    assert ("/v1/document-status/{document_id}", "get") in ops
    for path, method, status, _, schema in DECLARED:
        assert schema, f"{method} {path} {status} declares no schema"


@pytest.mark.parametrize(
    ("path", "method", "status", "ctype", "schema"),
    DECLARED,
    ids=[f"{m}:{p}:{s}:{c}" for p, m, s, c, _ in DECLARED],
)
def test_client_model_accepts_declared_schema(
    path: str, method: str, status: str, ctype: str, schema: dict[str, Any]
) -> None:
    model = _model_for(schema)
    # the same class on both sides: the server's component IS the client model's schema
    component = SPEC["components"]["schemas"][schema["$ref"].removeprefix(_REF)]
    assert component["title"] == model.__name__
    assert set(component.get("properties", {})) <= set(model.model_fields)

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def accepts(data: st.DataObject) -> None:
        instance = data.draw(from_schema(schema, SPEC["components"]["schemas"]))
        parsed = model.model_validate(instance)
        # and what the client parsed serialises back into the declared shape
        again = model.model_validate_json(parsed.model_dump_json())
        assert again == parsed

    accepts()


def test_client_request_model_is_the_servers() -> None:
    body = SPEC["paths"]["/v1/search"]["post"]["requestBody"]["content"]["application/json"]
    assert _model_for(body["schema"]) is models.SearchRequest


def test_one_definition() -> None:
    # the server's modules re-export the client's classes: no copy to drift
    assert api_models.SearchResponse is models.SearchResponse
    assert api_models.Problem is models.Problem
    assert filters.SearchFilters is models.SearchFilters
    assert ragline_client.SearchResponse is models.SearchResponse


def test_classification_values_match_the_event_model() -> None:
    field = models.SearchFilters.model_fields["classification"]
    schema = models.SearchFilters.model_json_schema()["properties"]["classification"]
    array = next(s for s in schema["anyOf"] if s.get("type") == "array")
    enum = array["items"]["enum"]
    assert field is not None
    assert sorted(enum) == sorted(c.value for c in Classification)


def test_answerability_is_in_the_openapi_document_and_the_client() -> None:
    """The calibrated probability and the per-request threshold are part of the contract
    (additive: optional, defaulting to null) on the server and in the client models."""
    schemas = SPEC["components"]["schemas"]
    prob = schemas["AbstainEvidence"]["properties"]["answerable_probability"]
    assert "answerable_probability" not in schemas["AbstainEvidence"].get("required", [])
    bounds = [s for s in prob.get("anyOf", [prob]) if s.get("type") == "number"]
    assert bounds and bounds[0]["minimum"] == 0.0 and bounds[0]["maximum"] == 1.0
    req = schemas["SearchRequest"]["properties"]["answerable_threshold"]
    rb = [s for s in req.get("anyOf", [req]) if s.get("type") == "number"]
    assert rb and rb[0]["minimum"] == 0.01 and rb[0]["maximum"] == 0.99
    assert models.AbstainEvidence.model_fields["answerable_probability"].default is None
    assert models.SearchRequest.model_fields["answerable_threshold"].default is None
    ev = models.AbstainEvidence.model_validate({"signal": "model", "answerable_probability": 0.7})
    assert ev.answerable_probability == 0.7
    with pytest.raises(ValueError):
        models.SearchRequest.model_validate({"query": "q", "answerable_threshold": 0.995})
