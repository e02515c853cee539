"""GET /v1/document-status/{id} for a document quarantined before it was ever indexed:
its source's groups see why (reason code, stage, ``never_indexed``); another group and
another tenant get the very 404 of a document that does not exist; ACL changes move it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from query_helpers import auth, query_settings, running_app

from ragline.config import Settings
from ragline.events import AclChange, DocControl, DocQuarantined, DocumentMeta, FindingsSummary
from ragline.indexing.samples import embedded_event
from ragline.indexing.writer import IndexWriter
from ragline.platform.stack.testing import unique_tenant
from ragline.scanning.seal import as_scanned
from ragline.store.pool import open_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

DOC = "vault:aws-keys"


class _NoEmbedder:
    """The status endpoint never embeds: no model load for these tests."""

    dim = 384

    async def embed(self, texts: list[str]) -> list[Any]:
        raise AssertionError("the status endpoint must not embed")


@pytest_asyncio.fixture(loop_scope="session")
async def status_client(stack: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(stack, query_settings(), _NoEmbedder()) as (_, c):
        yield c


async def _apply(stack: Settings, *events: Any) -> None:
    writer = IndexWriter(consumer="status-acl-tests")
    pool = await open_pool(stack.admin_dsn(), name="status-acl-tests")
    try:
        async with pool.connection() as conn:
            for ev in events:
                await writer.apply(conn, ev)
    finally:
        await pool.close()


def _quarantine(tenant: str, seq: int, *groups: str) -> DocQuarantined:
    return as_scanned(
        DocQuarantined(
            tenant_id=tenant,
            document_id=DOC,
            source_seq=seq,
            meta=DocumentMeta(acl_groups=groups, title="Deploy keys"),
            stage="scanner",
            reason_code="secret_found",
            reason="1 secret (aws_access_key)",
            findings=FindingsSummary(counts={"aws_access_key": 1}),
        )
    )


async def _status(c: httpx.AsyncClient, tenant: str, groups: list[str], doc: str = DOC):
    return await c.get(f"/v1/document-status/{doc}", headers=auth(tenant, groups))


def _same_404(a: httpx.Response, b: httpx.Response) -> bool:
    """Equal up to the request-specific fields (trace id, path)."""
    strip = {"trace_id", "instance"}
    ja = {k: v for k, v in a.json().items() if k not in strip}
    jb = {k: v for k, v in b.json().items() if k not in strip}
    return (
        a.status_code == b.status_code == 404
        and ja == jb
        and a.headers.get("content-type") == b.headers.get("content-type")
    )


async def test_quarantined_before_indexing_visible_to_its_groups_only(
    stack: Settings, status_client: httpx.AsyncClient
) -> None:
    tenant, other = unique_tenant("qs"), unique_tenant("qs")
    await _apply(stack, _quarantine(tenant, 3, "eng"))

    r = await _status(status_client, tenant, ["eng", "unrelated"])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "quarantined" and body["reason_code"] == "secret_found"
    assert body["stage"] == "scanner" and body["source_seq"] == 3
    assert body["doc_status"] is None and body["never_indexed"] is True
    assert body["findings"]["counts"] == {"aws_access_key": 1}
    # the document itself is still not there
    r = await status_client.get(f"/v1/documents/{DOC}", headers=auth(tenant, ["eng"]))
    assert r.status_code == 404

    missing = await _status(status_client, tenant, ["eng"], doc="vault:no-such-doc")
    assert missing.status_code == 404
    for t, groups in ((tenant, ["finance"]), (other, ["eng"]), (tenant, ["eng-"])):
        hidden = await _status(status_client, t, groups)
        assert _same_404(hidden, missing), (t, groups, hidden.text)


async def test_acl_change_moves_the_status_then_indexing_links_the_document(
    stack: Settings, status_client: httpx.AsyncClient
) -> None:
    tenant = unique_tenant("qs")
    await _apply(stack, _quarantine(tenant, 3, "eng"))
    revoke = DocControl(
        tenant_id=tenant,
        document_id=DOC,
        source_seq=4,
        action="acl",
        acl=AclChange(acl_groups=("security",)),
    )
    await _apply(stack, revoke)
    assert (await _status(status_client, tenant, ["eng"])).status_code == 404
    r = await _status(status_client, tenant, ["security"])
    assert r.status_code == 200 and r.json()["status"] == "quarantined"

    # a clean version (seq 5, newer than the ACL change) is indexed with its own ACL
    clean = embedded_event(
        tenant_id=tenant,
        document_id=DOC,
        source_seq=5,
        texts=["rotated"],
        acl_groups=("security", "ops"),
    )
    await _apply(stack, clean)
    r = await _status(status_client, tenant, ["ops"])
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "indexed" and body["reason_code"] is None
    assert body["doc_status"] == "indexed" and body["never_indexed"] is False
    assert (await _status(status_client, tenant, ["eng"])).status_code == 404
