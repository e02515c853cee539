"""Issue 3's front half on the real stack: files dropped into a watched folder come out of
connector -> parser -> scanner -> chunker -> enricher as doc.enriched with the right
metadata (ACL and classification from the folder policies, title/version from the
sidecar), each stage its own process."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.connector.fs_watch import FsWatcher
from ragline.runtime.publisher import EventPublisher

pytestmark = pytest.mark.integration

TREE = Path(__file__).parents[2] / "fixtures" / "connector" / "tree"
STAGES = ("connector", "parser", "scanner", "chunker", "enricher")


async def test_watched_folder_to_doc_enriched(
    stack: Settings, tenant: str, tmp_path: Path, service_process: Any, collector: Any
) -> None:
    procs = [service_process(name) for name in STAGES]
    await asyncio.gather(*(p.wait_metrics_async(timeout_s=180) for p in procs))
    root = tmp_path / "share"
    shutil.copytree(TREE, root)
    source = FilesystemSource(FsSourceConfig(root=root, source="share", tenant_id=tenant))
    async with EventPublisher(stack, service="test-watch") as pub:
        await FsWatcher(source, pub).poll_once()

    enriched = await collector("doc.enriched", tenant, count=3, timeout_s=240)
    by_id = {e["document_id"]: e for e in enriched}
    assert set(by_id) == {
        "share:handbook/hr/salary-bands.csv",
        "share:handbook/leave-policy.md",
        "share:product/install-guide.md",
    }
    guide = by_id["share:product/install-guide.md"]
    meta = guide["meta"]
    assert meta["title"] == "Widget installation guide" and meta["version"] == "4.2"
    assert meta["acl_groups"] == ["all-staff"] and meta["trust"] == "high"
    assert meta["source_type"] == "filesystem" and meta["effective_date"] == "2025-03-01"
    assert meta["metadata"] == {"department": "general", "product": "widget"}
    assert guide["change"] == "content" and guide["chunks"]
    for chunk in guide["chunks"]:
        assert chunk["enrichment"]["contextual_header"].startswith("Widget installation guide")
    assert any("W-1042" in c["text"] for c in guide["chunks"])
    hr = by_id["share:handbook/hr/salary-bands.csv"]
    assert hr["meta"]["acl_groups"] == ["hr"] and hr["meta"]["classification"] == "confidential"
    assert any(c["content_type"] == "table" for c in hr["chunks"])
    leave = by_id["share:handbook/leave-policy.md"]
    assert any("Leave policy" in c["section_path"] for c in leave["chunks"])
