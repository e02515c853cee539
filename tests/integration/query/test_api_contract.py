"""Issue 14 regressions on the real stack: hostile inputs end in a 4xx problem naming the
field (never a 500), every document id is addressable (also ids ending in ``/status``),
size caps apply before authentication, the OpenAPI document states what the server does,
the query service refuses privileged Postgres roles, and the audit hash is keyed."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest
import pytest_asyncio
from psycopg import sql
from psycopg.conninfo import make_conninfo
from pydantic import SecretStr
from query_helpers import auth, make_token, query_settings, running_app

from ragline.config import Settings
from ragline.errors import ConfigError
from ragline.indexing.samples import embedded_event
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.store.pool import open_pool
from services.query.api import create_app

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

GROUPS = ["eng"]
PLAIN, SUFFIXED, ONLY_PREFIX = "pz:a", "pz:a/status", "pz:b"


class _NoEmbedder:
    """Nothing here reaches the embedder: refusals happen before any backend."""

    dim = 384

    async def embed(self, texts: list[str]) -> list[Any]:
        raise AssertionError("must not embed")


@pytest_asyncio.fixture(loop_scope="session")
async def api(stack: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    tenant = unique_tenant("qc")
    writer = IndexWriter(consumer="api-contract-tests")
    pool = await open_pool(stack.admin_dsn(), name="api-contract-tests")
    try:
        async with pool.connection() as conn:
            for i, doc in enumerate((PLAIN, SUFFIXED, ONLY_PREFIX)):
                ev = embedded_event(
                    tenant_id=tenant,
                    document_id=doc,
                    source_seq=10 + i,
                    texts=[f"text of {doc}"],
                    acl_groups=("eng",),
                    title=f"title {doc}",
                )
                await writer.apply(conn, ev)
    finally:
        await pool.close()
    qs = query_settings(max_top_k=20, max_queries=4, max_body_bytes=4096)
    async with running_app(stack, qs, _NoEmbedder()) as (_, c):  # type: ignore[arg-type]
        yield c, tenant


def _field(r: httpx.Response) -> str:
    assert r.headers["content-type"] == "application/problem+json", r.text
    return str(r.json()["invalid_params"][0]["name"])


async def test_every_document_id_is_addressable(api: tuple[httpx.AsyncClient, str]) -> None:
    """Defect 3: /v1/documents/pz:a/status used to be the status of pz:a."""
    c, tenant = api
    h = auth(tenant, GROUPS)
    for doc in (PLAIN, SUFFIXED, ONLY_PREFIX):
        r = await c.get(f"/v1/documents/{doc}", headers=h)
        assert r.status_code == 200 and r.json()["document_id"] == doc, r.text
        assert "Deprecation" not in r.headers
        r = await c.get(f"/v1/document-status/{doc}", headers=h)
        assert r.status_code == 200 and r.json()["document_id"] == doc, r.text
        assert r.json()["status"] == "indexed"
    # percent-encoded slashes and reserved characters reach the route as the same id
    r = await c.get(f"/v1/documents/{quote(SUFFIXED, safe='')}", headers=h)
    assert r.status_code == 200 and r.json()["document_id"] == SUFFIXED


async def test_legacy_status_form_still_works_where_unambiguous(
    api: tuple[httpx.AsyncClient, str],
) -> None:
    c, tenant = api
    h = auth(tenant, GROUPS)
    # no document "pz:b/status": the old form answers the status of pz:b, marked deprecated
    r = await c.get(f"/v1/documents/{ONLY_PREFIX}/status", headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["document_id"] == ONLY_PREFIX and r.json()["stage"] is not None
    assert r.headers["Deprecation"] == "true"
    assert r.headers["Link"] == f'</v1/document-status/{ONLY_PREFIX}>; rel="successor-version"'
    # hidden or missing: the same 404 as any unknown document
    other = auth(tenant, ["finance"])
    for path, hdr in (
        (f"/v1/documents/{ONLY_PREFIX}/status", other),
        ("/v1/documents/pz:none/status", h),
    ):
        r = await c.get(path, headers=hdr)
        assert r.status_code == 404 and r.json()["title"] == "document not found"


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/documents/fs:x%00", "document_id"),
        ("/v1/documents/fs:x%00/status", "document_id"),
        ("/v1/document-status/fs:x%00", "document_id"),
        ("/v1/documents/fs:x%0A", "document_id"),
        ("/v1/documents/fs:%ED%A0%80", None),  # invalid UTF-8: replaced, then unknown
        ("/v1/documents/Bad%20Source:x", "document_id"),
        ("/v1/documents/", "document_id"),
        ("/v1/documents/noseparator", "document_id"),
        (f"/v1/documents/fs:{'x' * 600}", "document_id"),
    ],
)
async def test_hostile_document_ids_are_4xx(
    api: tuple[httpx.AsyncClient, str], path: str, field: str | None
) -> None:
    """Defect 1: NUL in a document id was a 500 (Postgres cannot hold NUL)."""
    c, tenant = api
    r = await c.get(path, headers=auth(tenant, GROUPS))
    assert 400 <= r.status_code < 500, r.text
    if field is not None:
        assert r.status_code == 422 and _field(r) == field


FILTER_FIELDS = ("versions", "document_ids", "source_type", "series_ids", "language", "trust")


@pytest.mark.parametrize("name", FILTER_FIELDS)
@pytest.mark.parametrize("bad", ["a\\u0000b", "\\ud800", "ok\\udfff"])
async def test_hostile_filter_values_are_422_naming_the_field(
    api: tuple[httpx.AsyncClient, str], name: str, bad: str
) -> None:
    """Defect 1: NUL or a lone surrogate in a filter value was a 500."""
    c, tenant = api
    raw = '{"query": "x", "filters": {"' + name + '": ["fine", "' + bad + '"]}}'
    h = {**auth(tenant, GROUPS), "Content-Type": "application/json"}
    r = await c.post("/v1/search", content=raw.encode(), headers=h)
    assert r.status_code == 422, r.text
    assert _field(r) == f"filters.{name}.1"
    single = '{"query": "x", "filters": {"' + name + '": "' + bad + '"}}'
    r = await c.post("/v1/search", content=single.encode(), headers=h)
    assert r.status_code == 422 and _field(r) == f"filters.{name}"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"queries": ["fine", "\\ud83d"]}', "queries.1"),
        ('{"queries": ["a\\u0000"]}', "queries.0"),
        ('{"query": "\\udc00 tail"}', "query"),
        ('{"query": "nul \\u0000"}', "query"),
        ('{"query": "   "}', "query"),
        ('{"query": "x", "top_k": "5"}', "top_k"),
        ('{"query": "x", "top_k": true}', "top_k"),
        ('{"query": "x", "rerank": 1}', "rerank"),
        ('{"query": "x", "\\u0000": 1}', "body"),
        ('{"query": "x", "queries": ["y"]}', "body"),
        ("{}", "body"),
        ("[]", "body"),
        ('{"query": "x", "as_of": "2024-13-01"}', "as_of"),
    ],
)
async def test_hostile_search_bodies_are_4xx_naming_the_field(
    api: tuple[httpx.AsyncClient, str], raw: str, field: str
) -> None:
    c, tenant = api
    h = {**auth(tenant, GROUPS), "Content-Type": "application/json"}
    r = await c.post("/v1/search", content=raw.encode(), headers=h)
    assert r.status_code in (400, 422), r.text
    assert _field(r) == field


async def test_malformed_bodies_are_400_or_415(api: tuple[httpx.AsyncClient, str]) -> None:
    c, tenant = api
    h = auth(tenant, GROUPS)
    for raw in (b"{not json", b"\xff\xfe\x00", b"[" * 3000 + b"]" * 3000):
        r = await c.post("/v1/search", content=raw, headers=h)
        assert r.status_code in (400, 413), r.text
    r = await c.post("/v1/search", content=b"query=x", headers={**h, "Content-Type": "text/plain"})
    assert r.status_code == 415 and r.headers["content-type"] == "application/problem+json"


async def test_limits_in_force_are_400_with_the_field(api: tuple[httpx.AsyncClient, str]) -> None:
    c, tenant = api
    h = auth(tenant, GROUPS)
    r = await c.post("/v1/search", json={"query": "x", "top_k": 21}, headers=h)
    assert r.status_code == 400 and _field(r) == "top_k"
    r = await c.post("/v1/search", json={"queries": ["a", "b", "c", "d", "e"]}, headers=h)
    assert r.status_code == 400 and _field(r) == "queries"


async def test_size_caps_apply_before_authentication(api: tuple[httpx.AsyncClient, str]) -> None:
    """Defect 5: the body used to be read and parsed before the token was checked."""
    c, _ = api
    big = json.dumps({"query": "x" * 5000}).encode()
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        r = await c.post("/v1/search", content=big, headers=headers)
        assert r.status_code == 413, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["status"] == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(10):
            yield b"x" * 1000

    r = await c.post("/v1/search", content=chunks())
    assert r.status_code == 413
    r = await c.get("/healthz", headers={"X-Pad": "y" * 20_000})
    assert r.status_code == 431 and r.headers["content-type"] == "application/problem+json"
    # within the caps, no token: 401 as before
    assert (await c.post("/v1/search", json={"query": "x"})).status_code == 401


@pytest.mark.parametrize(
    "claims", [{"tenant": "TENANT\n"}, {"groups": ["eng\n"]}, {"sub": "a\u0000b"}]
)
async def test_claims_with_trailing_newline_or_nul_are_401(
    api: tuple[httpx.AsyncClient, str], claims: dict[str, Any]
) -> None:
    """Defect 2: a token with tenant "acme\\n" or group "eng\\n" was accepted."""
    c, tenant = api
    base = {"tenant": tenant, "groups": GROUPS}
    base.update(
        {k: (v.replace("TENANT", tenant) if isinstance(v, str) else v) for k, v in claims.items()}
    )
    token = make_token(base.pop("tenant"), base.pop("groups"), **base)
    r = await c.get(f"/v1/documents/{PLAIN}", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401, r.text


async def test_openapi_states_what_the_server_does(api: tuple[httpx.AsyncClient, str]) -> None:
    """Defect 4."""
    c, _ = api
    spec = (await c.get("/openapi.json")).json()
    ops = {
        op["operationId"]: (path, method, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
    }
    assert set(ops) == {
        "search",
        "getDocument",
        "getDocumentStatus",
        "healthz",
        "readyz",
        "metrics",
    }
    req = spec["components"]["schemas"]["SearchRequest"]
    assert req["properties"]["top_k"]["maximum"] == 20  # the settings in force
    queries = next(s for s in req["properties"]["queries"]["anyOf"] if s.get("type") == "array")
    assert queries["maxItems"] == 4
    assert [b["required"] for b in req["oneOf"]] == [["query"], ["queries"]]
    assert req["examples"]
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for op_id in ("getDocument", "getDocumentStatus"):
        responses = ops[op_id][2]["responses"]
        assert {"200", "401", "404", "413", "422"} <= set(responses)
        assert ops[op_id][2]["security"] == [{"bearerAuth": []}]
    for _, _, op in ops.values():
        for code, resp in op["responses"].items():
            if int(code) >= 400:
                assert list(resp["content"]) == ["application/problem+json"], (op, code)
    metrics = ops["metrics"][2]["responses"]["200"]["content"]
    assert [m.split(";")[0] for m in metrics] == ["text/plain"]
    assert "security" not in ops["healthz"][2]
    assert ops["search"][2]["responses"]["429"]["headers"]["Retry-After"]["required"]


async def test_privileged_postgres_roles_are_refused(stack: Settings) -> None:
    """Defect 8: a superuser or BYPASSRLS query role would see every tenant's rows."""
    role, password = f"bypass_{uuid.uuid4().hex[:8]}", "bypass-test-password"
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as a:
        await a.execute(
            sql.SQL("CREATE ROLE {} LOGIN BYPASSRLS PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        cur = await a.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        admin_is_super = (await cur.fetchone())[0]  # type: ignore[index]
    try:
        dsns = [make_conninfo(stack.query_dsn(), user=role, password=password)]
        if admin_is_super:
            dsns.append(stack.admin_dsn())
        for dsn in dsns:
            settings = stack.model_copy(update={"pg_query_dsn": SecretStr(dsn)})
            app = create_app(settings, query_settings(), embedder=_NoEmbedder())  # type: ignore[arg-type]
            with pytest.raises(ConfigError, match="row-level security would not apply"):
                async with app.router.lifespan_context(app):
                    pass
    finally:
        async with await psycopg.AsyncConnection.connect(stack.admin_dsn(), autocommit=True) as a:
            await a.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


async def test_audit_hash_is_keyed() -> None:
    """Defect 8: an unsalted sha256 of a short query is reversed by hashing a dictionary."""
    from ragline.retrieval.audit import query_hash

    q = ("vacation days",)
    plain = hashlib.sha256(json.dumps(list(q)).encode()).hexdigest()
    keyed = query_hash(q, b"deployment-secret")
    assert keyed != plain and keyed != query_hash(q, b"another-deployment")
    expected = hmac.new(b"deployment-secret", json.dumps(list(q)).encode(), hashlib.sha256)
    assert keyed == expected.hexdigest()
