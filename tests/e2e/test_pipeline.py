"""The whole platform end to end: files -> connector -> ... -> indexer -> query over HTTP,
every service its own process on the real stack.

Proves: a sample corpus becomes searchable with citations; ACLs filter before ranking; a
corrupt PDF is quarantined while the next document flows; a planted secret reaches
neither store; a deleted document is gone from both stores and from results.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from opensearchpy import AsyncOpenSearch

from ragline.auth import mint_token
from ragline.evaluation.datasets import Principal
from ragline.store.os_index import index_name

from .conftest import REPO_ROOT, Pipeline, quiesce, sync_source

pytestmark = pytest.mark.e2e

AWS_KEY = "AKIAZ7QX3MPLE4R2T9VW"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8s2Lk3Mp"
CANARY = "zebracanary-7781"


async def _statuses(pipe: Pipeline, tenant: str) -> dict[str, tuple[str, str | None]]:
    async with await psycopg.AsyncConnection.connect(pipe.settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT document_id, status, reason_code FROM document_status WHERE tenant_id = %s",
            (tenant,),
        )
        return {r[0]: (r[1], r[2]) for r in await cur.fetchall()}


async def _wait_status(
    pipe: Pipeline, tenant: str, want: dict[str, str], timeout_s: float = 240
) -> dict[str, tuple[str, str | None]]:
    deadline = time.monotonic() + timeout_s
    got: dict[str, tuple[str, str | None]] = {}
    while time.monotonic() < deadline:
        got = await _statuses(pipe, tenant)
        if all(got.get(d, ("",))[0] == s for d, s in want.items()):
            await quiesce(pipe)  # OpenSearch and the cache have caught up too
            return got
        await asyncio.sleep(0.5)
    raise AssertionError(f"timed out: want {want}, got {got}\n{pipe.logs()[-5000:]}")


async def _search(
    pipe: Pipeline, tenant: str, groups: tuple[str, ...], query: str, **body: Any
) -> dict[str, Any]:
    token = mint_token(Principal(subject="e2e", tenant=tenant, groups=groups), pipe.jwt_secret)
    async with httpx.AsyncClient(base_url=pipe.query_url, timeout=60) as client:
        resp = await client.post(
            "/v1/search",
            headers={"Authorization": f"Bearer {token}"},
            json={"query": query, "top_k": 5, "mode": "hybrid", **body},
        )
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    shutil.copytree(REPO_ROOT / "examples" / "corpus", root)
    return root


async def test_files_to_cited_answers_with_acl_quarantine_secrets_and_delete(
    pipeline: Pipeline, corpus: Path, tenant: str
) -> None:
    (corpus / "handbook" / "vpn-setup.md").write_text(
        "# VPN setup\n\n## Credentials\n\nThe legacy deploy bot used "
        f"aws_access_key_id = {AWS_KEY} and aws_secret_access_key = {AWS_SECRET} "
        f"before rotation. Ticket {CANARY} tracks the rotation.\n"
    )
    (corpus / "handbook" / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj garbage \xff\xfe")
    sync_source(corpus, tenant)
    docs = {
        "fs:handbook/remote-work.md": "indexed",
        "fs:handbook/onboarding.html": "indexed",
        "fs:handbook/vpn-setup.md": "indexed",
        "fs:product/gateway-4.2.md": "indexed",
        "fs:reference/rate-limits.csv": "indexed",
        "fs:reference/retry.py": "indexed",
        "fs:handbook/broken.pdf": "quarantined",
    }
    got = await _wait_status(pipeline, tenant, docs)
    assert got["fs:handbook/broken.pdf"][1] == "corrupt_pdf"

    # cited hybrid answer
    body = await _search(pipeline, tenant, ("all", "eng"), "what does error GW-5031 mean?")
    top = body["results"][0]
    assert top["document_id"] == "fs:product/gateway-4.2.md"
    assert "Error GW-5031: upstream handshake timeout" in top["citation"]["section_path"]
    assert top["citation"]["version"] == "4.2"
    assert body["abstained"] is False and body["trace_id"]

    # ACL before ranking: the eng-only rate-limit table is invisible to group "all" alone
    q = "requests per minute for the enterprise plan"
    eng = await _search(pipeline, tenant, ("all", "eng"), q)
    assert any(r["document_id"] == "fs:reference/rate-limits.csv" for r in eng["results"])
    outsider = await _search(pipeline, tenant, ("all",), q)
    assert all(
        r["document_id"].startswith("fs:handbook/") or r["document_id"].startswith("fs:product/")
        for r in outsider["results"]
    )

    # the planted secret reached neither store; the rest of the text did
    async with await psycopg.AsyncConnection.connect(pipeline.settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT string_agg(text || ' ' || metadata::text, ' ') FROM chunks"
            " WHERE tenant_id = %s AND document_id = 'fs:handbook/vpn-setup.md'",
            (tenant,),
        )
        row = await cur.fetchone()
    pg_text = row[0] if row else ""
    assert CANARY in pg_text
    assert AWS_KEY not in pg_text and AWS_SECRET not in pg_text
    assert "[REDACTED:" in pg_text
    client = AsyncOpenSearch(hosts=list(pipeline.settings.opensearch_hosts))
    try:
        index = index_name(pipeline.settings.opensearch_index_prefix, tenant)
        await client.indices.refresh(index=index)
        for needle in (AWS_KEY, AWS_SECRET.split("/")[0]):
            resp = await client.search(
                index=index, body={"query": {"query_string": {"query": f'"{needle}"'}}}
            )
            assert resp["hits"]["total"]["value"] == 0, needle
        hits = await client.search(index=index, body={"query": {"match": {"text": CANARY}}})
        assert hits["hits"]["total"]["value"] >= 1

        # delete: the file disappears from the source -> gone from both stores and results
        (corpus / "handbook" / "vpn-setup.md").unlink()
        sync_source(corpus, tenant)
        await _wait_status(pipeline, tenant, {"fs:handbook/vpn-setup.md": "deleted"})
        await client.indices.refresh(index=index)
        hits = await client.search(index=index, body={"query": {"match": {"text": CANARY}}})
        assert hits["hits"]["total"]["value"] == 0
    finally:
        await client.close()
    async with await psycopg.AsyncConnection.connect(pipeline.settings.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM chunks WHERE tenant_id = %s AND text LIKE %s",
            (tenant, f"%{CANARY}%"),
        )
        row = await cur.fetchone()
        assert row is not None and row[0] == 0
    after = await _search(pipeline, tenant, ("all", "eng"), f"ticket {CANARY} rotation")
    assert all(r["document_id"] != "fs:handbook/vpn-setup.md" for r in after["results"])
