"""Documents without readers on the real stack: a folder where one file has no ACL goes
through the connector and the indexer (Postgres + OpenSearch); ``sync`` names the file
and the fix, ``ragline documents no-readers`` lists it with status ``no_readers``, and
``--default-groups`` gives it readers (issue 36, item 1)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.connector.settings import ConnectorSettings
from ragline.connector.stage import ConnectorStage
from ragline.events import DocEmbedded, DocFetched
from ragline.indexing.samples import embedded_event
from ragline.indexing.settings import IndexerSettings
from ragline.indexing.stage import IndexerStage
from ragline.runtime.stage import StageContext
from ragline.scanning.seal import as_scanned

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )


def _embedded(fetched: DocFetched) -> DocEmbedded:
    """What parser..embedder make of a doc.fetched (the envelope derived and the meta
    passed through, as they do)."""
    text = base64.b64decode(fetched.content_b64 or "").decode()
    ev = embedded_event(
        tenant_id=fetched.tenant_id,
        document_id=fetched.document_id,
        source_seq=fetched.source_seq,
        texts=[text],
        acl_groups=fetched.meta.acl_groups,
        classification=fetched.meta.classification,
    )
    env = fetched.derived("embedder")
    # the raw meta passed through as the scanner would emit it: sealed (issue 31)
    return as_scanned(
        ev.model_copy(
            update={
                "event_id": env["event_id"],
                "content_hash": fetched.content_hash,
                "meta": fetched.meta,
            }
        )
    )


async def _ingest(stack: Settings, src: FilesystemSource) -> None:
    ctx = StageContext(settings=stack, logger=logging.getLogger("test.no_readers"))
    events = [src.upsert_event_for(d, d.path.read_bytes()) for d in src.scan().docs.values()]
    connector = ConnectorStage(stack, ConnectorSettings())
    # refresh "true": searchable on return without the 1 s wait (indexing/conftest.py)
    indexer = IndexerStage(stack, IndexerSettings(os_refresh="true"))
    await connector.start()
    await indexer.start()
    try:
        fetched = [
            out.event
            for res in await connector.handle_batch(events, ctx)
            if not isinstance(res, BaseException)
            for out in res
            if isinstance(out.event, DocFetched)
        ]
        assert len(fetched) == len(events)
        for res in await indexer.handle_batch([_embedded(f) for f in fetched], ctx):
            assert not isinstance(res, BaseException), res
    finally:
        await indexer.stop()
        await connector.stop()


async def test_documents_without_readers_are_reported_and_listed(
    stack: Settings, tenant: str, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    (root / "team").mkdir(parents=True)
    (root / "open.md").write_text("# Open\n\nEveryone should read this.\n")
    (root / "team" / "_policy.yaml").write_text("acl_groups: [eng]\n")
    (root / "team" / "plan.md").write_text("# Plan\n\nThe team's plan.\n")
    await _ingest(
        stack, FilesystemSource(FsSourceConfig(root=root, source="notes", tenant_id=tenant))
    )

    listed = await asyncio.to_thread(_cli, "documents", "no-readers", "--tenant", tenant, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["document_id"], r["status"], r["pipeline_status"]) for r in rows] == [
        ("notes:open.md", "no_readers", "indexed")
    ]
    text = await asyncio.to_thread(_cli, "documents", "no-readers", "--tenant", tenant)
    assert "no_readers  indexed   notes:open.md" in text.stdout and "_policy.yaml" in text.stdout

    dry = await asyncio.to_thread(
        _cli, "sync", str(root), "--tenant", tenant, "--dry-run", "--no-progress"
    )
    assert dry.returncode == 0, dry.stderr
    assert "ok           2" in dry.stdout  # the source is derived from the folder: notes
    assert "no_readers: 1 document with no acl_groups" in dry.stdout
    assert "  notes:open.md" in dry.stdout and "--default-groups" in dry.stdout

    fixed = await asyncio.to_thread(
        _cli,
        "sync",
        str(root),
        "--tenant",
        tenant,
        "--default-groups",
        "all-staff",
        "--dry-run",
        "--list",
        "--no-progress",
    )
    assert fixed.returncode == 0, fixed.stderr
    assert "stale    notes:open.md" in fixed.stdout  # its new ACL is a metadata change
    assert "no_readers" not in fixed.stdout
    assert "notes:team/plan.md" not in fixed.stdout  # its policy already named readers
