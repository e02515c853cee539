"""On the real stack: the fs watcher and the webhook publish source.changes; the connector
service turns them into doc.fetched / doc.control and records 'accepted' in Postgres."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.connector.fs_watch import FsWatcher
from ragline.connector.webhook import SIGNATURE_HEADER, sign
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[2] / "fixtures" / "connector"
SECRET = "integration-webhook-secret"


async def test_files_dropped_into_a_watched_folder_become_source_changes(
    stack: Settings, tenant: str, tmp_path: Path, collector: Any
) -> None:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "tree", root)
    source = FilesystemSource(FsSourceConfig(root=root, source="share", tenant_id=tenant))
    async with EventPublisher(stack, service="test-watch") as pub:
        watcher = FsWatcher(source, pub, state_file=tmp_path / "watch.json", interval_s=0.2)
        stop = asyncio.Event()
        task = asyncio.create_task(watcher.run(stop))
        try:
            first = await collector("source.changes", tenant, count=3)
            assert sorted(e["document_id"] for e in first) == [
                "share:handbook/hr/salary-bands.csv",
                "share:handbook/leave-policy.md",
                "share:product/install-guide.md",
            ]
            by_id = {e["document_id"]: e for e in first}
            hr = by_id["share:handbook/hr/salary-bands.csv"]
            assert hr["event_type"] == "source.upsert"
            assert hr["meta"]["acl_groups"] == ["hr"]
            assert hr["meta"]["classification"] == "confidential"
            assert base64.b64decode(hr["content_b64"]).startswith(b"band,min,max")
            # drop a new file, remove one, narrow an ACL by sidecar
            (root / "product" / "release-notes.md").write_text("# Widget 4.3\n\nFixed W-1042.\n")
            (root / "handbook" / "leave-policy.md").unlink()
            (root / "product" / "install-guide.md.meta.yaml").write_text(
                (FIXTURES / "tree/product/install-guide.md.meta.yaml").read_text()
                + "acl_groups: [support]\n"
            )
            # (partitions are keyed by document: no order across documents)
            events = await collector("source.changes", tenant, count=6, settle_s=1.0)
            kinds = sorted((e["event_type"], e["document_id"]) for e in events)
            assert kinds == sorted(
                [(e["event_type"], e["document_id"]) for e in first]
                + [
                    ("source.upsert", "share:product/release-notes.md"),
                    ("source.delete", "share:handbook/leave-policy.md"),
                    ("source.acl", "share:product/install-guide.md"),
                ]
            )
            acl = next(e for e in events if e["event_type"] == "source.acl")
            assert acl["acl_groups"] == ["support"]
        finally:
            stop.set()
            await task


def _post(url: str, payload: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{url}/v1/changes", content=payload, headers=headers, timeout=10)


async def test_connector_service_webhook_and_intake(
    stack: Settings, tenant: str, tmp_path: Path, service_process: Any, collector: Any
) -> None:
    proc = service_process(
        "connector",
        env={
            "RAGLINE_CONNECTOR_WEBHOOK_SECRET": SECRET,
            "RAGLINE_CONNECTOR_ALLOWED_ROOTS": str(tmp_path),
            "RAGLINE_CONNECTOR_WEBHOOK_ALLOW_FILE_REFS": "true",
        },
    )
    await proc.wait_metrics_async()
    url = proc.http_url

    async def post(payload: dict[str, Any], *, signed: bool = False) -> httpx.Response:
        raw = json.dumps(payload).encode()
        headers = (
            {SIGNATURE_HEADER: sign(SECRET, raw)}
            if signed
            else {"Authorization": f"Bearer {SECRET}"}
        )
        return await asyncio.to_thread(_post, url, raw, headers)

    for _ in range(50):  # the HTTP server starts next to the consumer
        try:
            await asyncio.to_thread(httpx.get, f"{url}/healthz", timeout=1)
            break
        except httpx.TransportError:
            await asyncio.sleep(0.2)

    good = json.loads((FIXTURES / "webhook/upsert_inline.json").read_text())
    good["tenant_id"] = tenant
    # bad payloads: 4xx with a precise reason, nothing published
    bad = dict(good, meta=dict(good["meta"], acl_groups=["no spaces allowed"]))
    r = await post(bad)
    assert r.status_code == 422 and r.json()["field"] == "meta.acl_groups.0"
    r = await asyncio.to_thread(
        _post, url, json.dumps(good).encode(), {"Authorization": "Bearer x"}
    )
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"

    # good upsert -> source.changes -> connector -> doc.fetched, status accepted
    r = await post(good)
    assert r.status_code == 202, r.text
    event_id = r.json()["event_id"]
    [change] = await collector("source.changes", tenant, count=1)
    assert change["event_id"] == event_id
    [fetched] = await collector("doc.fetched", tenant, count=1)
    assert fetched["change"] == "content" and fetched["document_id"] == good["document_id"]
    assert base64.b64decode(fetched["content_b64"]).decode() == good["content_text"]

    async with await psycopg.AsyncConnection.connect(stack.admin_dsn()) as conn:
        cur = await conn.execute(
            "SELECT status, source_seq, content_hash FROM document_status"
            " WHERE tenant_id = %s AND document_id = %s",
            (tenant, good["document_id"]),
        )
        assert await cur.fetchone() == ("accepted", good["source_seq"], fetched["content_hash"])

    # a file reference under the allowed root, then a signed delete: the fast path
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n")
    ref = {
        "event_type": "source.upsert",
        "tenant_id": tenant,
        "document_id": "files:notes.md",
        "source_seq": 1,
        "meta": {"acl_groups": ["eng"]},
        "content_ref": {"kind": "file", "location": str(doc)},
    }
    raw = json.dumps(ref).encode()
    r = await asyncio.to_thread(_post, url, raw, {SIGNATURE_HEADER: sign(SECRET, raw)})
    assert r.status_code == 202, r.text
    delete = {
        "event_type": "source.delete",
        "tenant_id": tenant,
        "document_id": good["document_id"],
        "source_seq": good["source_seq"] + 1,
    }
    assert (await post(delete, signed=True)).status_code == 202
    fetched_all = await collector("doc.fetched", tenant, count=2)
    by_id = {e["document_id"]: e for e in fetched_all}
    notes = by_id["files:notes.md"]
    assert notes["meta"]["mime_type"] == "text/markdown"
    assert base64.b64decode(notes["content_b64"]) == b"# Notes\n"
    [control] = await collector("doc.control", tenant, count=1)
    assert control["action"] == "delete" and control["source_seq"] == good["source_seq"] + 1
    assert "ragline_connector_decisions_total" in proc.metrics()
    assert os.environ.get("RAGLINE_CONNECTOR_WEBHOOK_SECRET") is None  # not leaked to others
