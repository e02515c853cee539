"""``ragline sync`` against the real stack: Postgres seeded with SQL, a directory tree as
the source; missing and stale documents are re-emitted, removed ones deleted."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ragline.config import Settings
from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.hashing import content_hash

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000


async def seed(settings: Settings, rows: list[tuple[Any, ...]]) -> None:
    """rows: (tenant, document_id, documents.status | None, seq, content_hash, meta_hash,
    document_status.status | None)."""
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as c:
        for tenant, doc, d_status, seq, chash, mhash, s_status in rows:
            if d_status is not None:
                await c.execute(
                    "INSERT INTO documents (tenant_id, document_id, content_hash, meta_hash,"
                    " source_seq, acl_seq, status) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (tenant, doc, chash, mhash, seq, seq, d_status),
                )
            if s_status is not None:
                await c.execute(
                    "INSERT INTO document_status (tenant_id, document_id, source_seq,"
                    " content_hash, stage, status) VALUES (%s, %s, %s, %s, 'indexer', %s)",
                    (tenant, doc, seq, chash, s_status),
                )


def run_sync(root: Path, tenant: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", "sync", str(root), "--tenant", tenant, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )


async def test_sync_reemits_missing_and_stale_and_deletes_removed(
    stack: Settings, tenant: str, tmp_path: Path, collector: Any
) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "_policy.yaml").write_text("acl_groups: [eng]\n")
    for i, name in enumerate(["in-sync.md", "stale.md", "missing.md", "lost-in-flight.md"]):
        (root / name).write_text(f"# {name}\n\nbody {i}\n")
    for p in root.iterdir():
        os.utime(p, ns=(T0, T0))
    docs = FilesystemSource(FsSourceConfig(root=root, source="fs", tenant_id=tenant)).scan().docs
    ok, stale = docs["in-sync.md"], docs["stale.md"]
    await seed(
        stack,
        [
            (
                tenant,
                "fs:in-sync.md",
                "indexed",
                ok.source_seq,
                content_hash(ok.path.read_bytes()),
                ok.meta_hash,
                "indexed",
            ),
            # indexed from an older version of the file
            (
                tenant,
                "fs:stale.md",
                "indexed",
                stale.source_seq - 10,
                "0" * 64,
                stale.meta_hash,
                "indexed",
            ),
            # accepted before the broker was lost: never indexed
            (tenant, "fs:lost-in-flight.md", None, ok.source_seq, "1" * 64, None, "accepted"),
            # the source no longer has these
            (tenant, "fs:removed.md", "indexed", T0, "2" * 64, "m", "indexed"),
            (tenant, "fs:already-deleted.md", "deleted", T0, None, None, "deleted"),
            # another source's document is out of scope
            (tenant, "wiki:page", "indexed", T0, "3" * 64, "m", "indexed"),
        ],
    )

    dry = await asyncio.to_thread(
        run_sync, root, tenant, "--source", "fs", "--dry-run", "--list", "--no-progress"
    )
    assert dry.returncode == 0, dry.stderr
    # 1 delete of the source's 4 live documents: over the 10% a sync deletes on its own
    assert "would refuse to delete" in dry.stderr and "--allow-deletes" in dry.stderr
    assert "stale    fs:stale.md" in dry.stdout
    assert "missing  fs:missing.md" in dry.stdout
    assert "missing  fs:lost-in-flight.md" in dry.stdout
    assert "delete   fs:removed.md" in dry.stdout
    assert "already-deleted" not in dry.stdout and "wiki:page" not in dry.stdout
    assert "dry run: nothing published" in dry.stdout
    assert await collector("source.changes", tenant, count=0, settle_s=1.0) == []

    refused = await asyncio.to_thread(run_sync, root, tenant, "--source", "fs", "--no-progress")
    assert refused.returncode == 1 and "refused to delete" in refused.stderr
    assert "delete   fs:removed.md" in refused.stdout  # printed what it would delete
    assert await collector("source.changes", tenant, count=0, settle_s=1.0) == []

    real = await asyncio.to_thread(run_sync, root, tenant, "--source", "fs", "--allow-deletes")
    assert real.returncode == 0, real.stderr
    assert "publish" in real.stderr  # the progress bar
    events = await collector("source.changes", tenant, count=4, settle_s=1.0)
    assert {e.get("priority") for e in events} == {"bulk"}  # sync is bulk work by default
    got = sorted((e["event_type"], e["document_id"]) for e in events)
    assert got == [
        ("source.delete", "fs:removed.md"),
        ("source.upsert", "fs:lost-in-flight.md"),
        ("source.upsert", "fs:missing.md"),
        ("source.upsert", "fs:stale.md"),
    ]
    delete = next(e for e in events if e["event_type"] == "source.delete")
    assert delete["source_seq"] > T0
    upsert = next(e for e in events if e["document_id"] == "fs:stale.md")
    assert upsert["source_seq"] == stale.source_seq and upsert["meta"]["acl_groups"] == ["eng"]
    assert upsert["content_hash"] == content_hash(stale.path.read_bytes())


async def test_sync_refuses_to_empty_a_tenant(stack: Settings, tenant: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    await seed(stack, [(tenant, "fs:a.md", "indexed", T0, "4" * 64, "m", "indexed")])
    out = await asyncio.to_thread(
        run_sync, tmp_path / "empty", tenant, "--source", "fs", "--no-progress"
    )
    assert out.returncode == 1 and "--allow-empty" in out.stderr


async def test_sync_of_a_second_folder_never_deletes_the_first(
    stack: Settings, tenant: str, tmp_path: Path, collector: Any
) -> None:
    """The newcomer's trap: a sample corpus synced as source ``fs``, then your own folder
    synced with the same source name would delete every sample document."""
    sample, mine = tmp_path / "sample", tmp_path / "mine"
    for root, names in ((sample, ["a.md", "b.md"]), (mine, ["notes.md"])):
        root.mkdir()
        (root / "_policy.yaml").write_text("acl_groups: [eng]\n")
        for name in names:
            (root / name).write_text(f"# {name}\n")
    for name in ("a.md", "b.md"):
        await seed(stack, [(tenant, f"fs:{name}", "indexed", T0, "5" * 64, "m", "indexed")])
        await set_uri(stack, tenant, f"fs:{name}", (sample / name).as_uri())

    # without --source the folder names its own source: nothing of "fs" is touched
    derived = await asyncio.to_thread(run_sync, mine, tenant, "--dry-run", "--list")
    assert derived.returncode == 0, derived.stderr
    assert "missing  mine:notes.md" in derived.stdout and "delete   fs:" not in derived.stdout

    # the same source name from another folder: the deletes are printed, then refused
    same = await asyncio.to_thread(run_sync, mine, tenant, "--source", "fs", "--no-progress")
    assert same.returncode == 1
    assert "delete   fs:a.md" in same.stdout and "delete   fs:b.md" in same.stdout
    assert "2 of the 2 documents to delete were not created from this source" in same.stderr
    assert await collector("source.changes", tenant, count=0, settle_s=1.0) == []

    forced = await asyncio.to_thread(
        run_sync, mine, tenant, "--source", "fs", "--allow-deletes", "--no-progress"
    )
    assert forced.returncode == 0, forced.stderr
    events = await collector("source.changes", tenant, count=3, settle_s=1.0)
    assert sorted((e["event_type"], e["document_id"]) for e in events) == [
        ("source.delete", "fs:a.md"),
        ("source.delete", "fs:b.md"),
        ("source.upsert", "fs:notes.md"),
    ]


async def set_uri(settings: Settings, tenant: str, doc: str, uri: str) -> None:
    async with await psycopg.AsyncConnection.connect(settings.admin_dsn(), autocommit=True) as c:
        await c.execute(
            "UPDATE documents SET uri = %s WHERE tenant_id = %s AND document_id = %s",
            (uri, tenant, doc),
        )


async def test_watch_cli_once_publishes_and_keeps_state(
    stack: Settings, tenant: str, tmp_path: Path, collector: Any
) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "_policy.yaml").write_text("acl_groups: [eng]\n")
    (root / "one.md").write_text("# One\n")
    (root / "two.txt").write_text("two\n")
    state = tmp_path / "watch-state.json"

    def watch() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "ragline.cli",
                "watch",
                str(root),
                "--tenant",
                tenant,
                "--source",
                "team",
                "--once",
                "--settle",
                "0",
                "--state-file",
                str(state),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ),
            check=False,
        )

    first = await asyncio.to_thread(watch)
    assert first.returncode == 0, first.stderr
    assert "upsert       2" in first.stdout
    (root / "two.txt").unlink()
    second = await asyncio.to_thread(watch)  # a new process: the state file remembers
    assert second.returncode == 0, second.stderr
    assert "delete       1" in second.stdout and "upsert" not in second.stdout
    events = await collector("source.changes", tenant, count=3, settle_s=1.0)
    lanes = {(e["event_type"], e["document_id"]): e.get("priority", "interactive") for e in events}
    assert lanes == {  # the first poll (no state yet) is a backfill: bulk; later edits are not
        ("source.upsert", "team:one.md"): "bulk",
        ("source.upsert", "team:two.txt"): "bulk",
        ("source.delete", "team:two.txt"): "interactive",
    }
    assert sorted((e["event_type"], e["document_id"]) for e in events) == [
        ("source.delete", "team:two.txt"),
        ("source.upsert", "team:one.md"),
        ("source.upsert", "team:two.txt"),
    ]
