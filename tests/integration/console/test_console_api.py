"""The console's HTTP surface on the real stack: every route refuses non-admin tokens,
mutations need CSRF with a session cookie and land in the audit trail, dead letters are
listed redacted and replayed/purged only after confirmation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jwt
import psycopg
import pytest
import pytest_asyncio
from console_world import GROUP_A, SECRET, World, publish_dead_letter, token
from fastapi.routing import APIRoute

from ragline.config import Settings
from ragline.console.audit import record_action
from services.console.api import PAGES

pytestmark = pytest.mark.integration

PUBLIC = {"/healthz", "/console/login", "/console/static/{name}", "/console/api/login"}


@pytest_asyncio.fixture(loop_scope="session")
async def http(console_app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=console_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as c:
        yield c


def bearer(t: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {t}"}


def _routes(app: Any) -> list[tuple[str, str]]:
    """Every (method, path) of the app under /console but the public ones; a path
    parameter is filled with each value it takes (every page, every action)."""
    values = {"page": list(PAGES), "action": ["replay", "purge", "flip", "rollback"]}
    out = []
    for r in app.routes:
        if isinstance(r, APIRoute) and r.path.startswith("/console") and r.path not in PUBLIC:
            for m in sorted(r.methods - {"HEAD"}):
                names = [n for n in values if "{" + n + "}" in r.path] or [None]
                for n in names:
                    for v in values[n] if n else [None]:
                        out.append((m, r.path.replace("{" + n + "}", v) if n and v else r.path))
    return out


async def test_every_console_route_refuses_non_admin_tokens(
    http: httpx.AsyncClient, console_app: Any, world: World
) -> None:
    routes = _routes(console_app)
    assert len(routes) >= 25  # every page and API route, found from the app itself
    plain = token(world.tenant)  # valid, but no admin role
    claims = jwt.decode(token(world.tenant, admin=["*"]), options={"verify_signature": False})
    claims["roles"] = ["ragline:reader"]
    wrong_role = jwt.encode(claims, SECRET, algorithm="HS256")
    params = {"tenant": world.tenant, "id": "hr:leave"}
    body = {
        "confirm": True,
        "topic": "doc.fetched.dlq",
        "reason": "test",
        "query": "x",
        "principal": {"tenant": world.tenant, "groups": [GROUP_A]},
    }
    for tok in (plain, wrong_role):
        for method, path in routes:
            r = await http.request(
                method,
                path,
                params=params,
                headers=bearer(tok),
                json=body if method == "POST" else None,
            )
            assert r.status_code == 403, (method, path, r.status_code, r.text[:200])
        # and no session is handed out to it
        r = await http.post("/console/api/login", json={"token": tok})
        assert r.status_code == 403 and "set-cookie" not in r.headers
    # without any credential: 401 for the API, the login page for pages
    for method, path in routes:
        r = await http.request(method, path, params=params, json=body if method == "POST" else None)
        assert r.status_code in ((303,) if "/api/" not in path else (401,)), (method, path)


async def test_tenant_admins_see_only_their_tenants(
    http: httpx.AsyncClient, world: World, stack: Settings
) -> None:
    mine = bearer(token(world.tenant, admin=[world.tenant]))
    r = await http.get("/console/api/documents", params={"tenant": world.other}, headers=mine)
    assert r.status_code == 403
    r = await http.get("/console/api/documents", params={"tenant": world.tenant}, headers=mine)
    assert r.status_code == 200
    ids = {d["document_id"] for d in r.json()["documents"]}
    assert {"hr:leave", "up:blocked", "fs:orphan"} <= ids
    r = await http.post(
        "/console/api/spaces/rollback", headers=mine, json={"reason": "try", "confirm": True}
    )
    assert r.status_code == 403  # spaces are every tenant's: platform admins only
    # the audit trail: an action on the other tenant is not shown to this tenant's admin
    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        await record_action(
            conn, actor="x", action="repair", tenant_id=world.other, target={}, outcome="ok"
        )
    r = await http.get("/console/api/audit", headers=mine)
    assert r.status_code == 200
    assert {e["tenant_id"] for e in r.json()["entries"]} <= {world.tenant}
    every = bearer(token(world.tenant, admin=["*"]))
    r = await http.get("/console/api/audit", headers=every)
    assert world.other in {e["tenant_id"] for e in r.json()["entries"]}


async def test_search_and_explain_run_as_the_principal(
    http: httpx.AsyncClient, world: World
) -> None:
    h = bearer(token(world.tenant, admin=["*"]))
    p = {"tenant": world.tenant, "groups": [GROUP_A]}
    r = await http.post(
        "/console/api/search", headers=h, json={"principal": p, "query": "how many vacation days"}
    )
    assert r.status_code == 200, r.text
    res = r.json()["results"]
    assert res and all(x["document_id"] != "hr:payroll-b" for x in res)
    assert {"bm25_rank", "dense_rank", "rrf"} <= set(res[0]["scores"])
    r = await http.post(
        "/console/api/explain",
        headers=h,
        json={"principal": p, "query": "payroll", "document_id": "hr:payroll-b"},
    )
    assert r.status_code == 200 and r.json()["cause"] == "outside_acl"


async def _audit_rows(settings: Settings, action: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT actor, tenant_id, target, outcome FROM console_audit WHERE action = %s"
            " ORDER BY audit_id",
            (action,),
        )
        return list(await cur.fetchall())


async def test_cookie_mutations_need_csrf_and_are_audited(
    http: httpx.AsyncClient, world: World, stack: Settings
) -> None:
    admin_tok = token(world.tenant, admin=[world.tenant], sub="csrf-op")
    r = await http.post("/console/api/login", json={"token": admin_tok})
    assert r.status_code == 200 and "httponly" in r.headers["set-cookie"].lower()
    csrf = r.json()["csrf"]
    params = {"tenant": world.tenant, "id": "ops:disk"}
    try:
        r = await http.post("/console/api/document/repair", params=params, json={"confirm": True})
        assert r.status_code == 403 and "CSRF" in r.text
        r = await http.post(
            "/console/api/document/repair",
            params=params,
            json={"confirm": True},
            headers={"x-csrf-token": "0" * 64},
        )
        assert r.status_code == 403
        r = await http.post(
            "/console/api/document/repair",
            params=params,
            json={"confirm": True},
            headers={"x-csrf-token": csrf},
        )
        assert r.status_code == 200, r.text
        assert r.json()["documents"] == 1
    finally:
        http.cookies.clear()
    rows = await _audit_rows(stack, "repair")
    assert any(a == "csrf-op" and t == world.tenant and o == "ok" for a, t, _, o in rows)


async def test_dead_letters_redacted_confirmed_and_audited(
    http: httpx.AsyncClient, world: World, console_settings: Settings, stack: Settings
) -> None:
    raw = b"payload text that must never be shown"
    await publish_dead_letter(
        console_settings, world.tenant, "fs:AKIA-secret-in-a-name.txt", ValueError("x"), raw=raw
    )
    h = bearer(token(world.tenant, admin=[world.tenant], sub="dlq-op"))
    r = await http.get("/console/api/dead-letters", headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [t["pending"] for t in body["topics"] if t["topic"] == "doc.fetched.dlq"] == [1]
    (rec,) = body["records"]
    assert rec["error_class"] and rec["tenant_id"] == world.tenant
    text = r.text
    assert "AKIA" not in text and "payload text" not in text and rec["document"].startswith("fs:")
    # without confirm: a preview, nothing done
    args = {"topic": "doc.fetched.dlq", "tenant": world.tenant}
    r = await http.post("/console/api/dead-letters/purge", headers=h, json=args)
    assert r.status_code == 200 and r.json()["dry_run"] and r.json()["handled"] == 1
    r = await http.get("/console/api/dead-letters", headers=h)
    assert [t["pending"] for t in r.json()["topics"] if t["topic"] == "doc.fetched.dlq"] == [1]
    r = await http.post(
        "/console/api/dead-letters/purge", headers=h, json={**args, "confirm": True}
    )
    assert r.status_code == 200 and r.json()["handled"] == 1
    r = await http.get("/console/api/dead-letters", headers=h)
    assert not r.json()["records"]
    rows = await _audit_rows(stack, "dlq_purge")
    assert any(a == "dlq-op" and o == "ok" for a, _, _, o in rows)


async def test_space_actions_refused_by_state_are_audited(
    http: httpx.AsyncClient, world: World, stack: Settings
) -> None:
    h = bearer(token(world.tenant, admin=["*"], sub="space-op"))
    r = await http.get("/console/api/spaces", headers=h)
    assert r.status_code == 200
    assert any(s["state"] == "live" for s in r.json()["spaces"])
    r = await http.post(
        "/console/api/spaces/flip",
        headers=h,
        json={"space": "no-such-space", "reason": "test", "confirm": True},
    )
    assert r.status_code == 409
    rows = await _audit_rows(stack, "space_flip")
    assert any(a == "space-op" and o.startswith("refused") for a, _, _, o in rows)
