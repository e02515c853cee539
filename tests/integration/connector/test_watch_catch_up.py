"""`ragline watch` as its own process on the real broker (issue 29): SIGKILLed, then files
are added, edited and removed while no watcher runs; the restarted watcher publishes
exactly those changes from its state file, as interactive edits, and nothing it had
already published."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragline.config import Settings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def _watch(root: Path, tenant: str, state: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "libs"), str(REPO)])}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragline.cli",
            "watch",
            str(root),
            "--tenant",
            tenant,
            "--source",
            "share",
            "--default-groups",
            "eng",
            "--state-file",
            str(state),
            "--interval",
            "0.3",
            "--settle",
            "0",
        ],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _kinds(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    # the lane travels in the envelope; the interactive default may be left out
    return sorted(
        (e["event_type"], e["document_id"], e.get("priority", "interactive")) for e in events
    )


async def test_a_restarted_watcher_publishes_what_changed_while_it_was_down(
    stack: Settings, tenant: str, tmp_path: Path, collector: Any
) -> None:
    root, state, log = tmp_path / "share", tmp_path / "watch.json", tmp_path / "watch.log"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfirst\n")
    (root / "b.md").write_text("# B\n")
    proc = _watch(root, tenant, state, log)
    try:
        first = await collector("source.changes", tenant, count=2, timeout_s=90)
        assert {e["document_id"] for e in first} == {"share:a.md", "share:b.md"}
        for _ in range(100):  # the poll that published them also saved the snapshot
            if state.exists() and "b.md" in state.read_text():
                break
            await asyncio.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # while no watcher runs
        (root / "a.md").write_text("# A\n\nedited while the watcher was down\n")
        (root / "b.md").unlink()
        (root / "c.md").write_text("# C\n")
        proc = _watch(root, tenant, state, log)
        events = await collector("source.changes", tenant, count=5, timeout_s=90, settle_s=3.0)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    later = [e for e in events if e not in first]
    assert _kinds(later) == [
        ("source.delete", "share:b.md", "interactive"),
        ("source.upsert", "share:a.md", "interactive"),
        ("source.upsert", "share:c.md", "interactive"),
    ], log.read_text()[-2000:]
