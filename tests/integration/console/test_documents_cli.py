"""``ragline documents list|show|explain`` against the real stack (a subprocess, as an
operator runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from console_world import GROUP_A, World

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def ragline(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "libs"), str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "ragline.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def test_list_names_documents_nobody_can_read(world: World) -> None:
    r = ragline("documents", "list", "--tenant", world.tenant, "--state", "no_readers", "--json")
    assert r.returncode == 0, r.stderr
    assert [d["document_id"] for d in json.loads(r.stdout)] == ["fs:orphan"]
    r = ragline("documents", "list", "--tenant", world.tenant)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("up:blocked"))
    assert "quarantined" in line and "secret_blocked" in line
    assert "no readers" in r.stderr


def test_show_has_the_timeline(world: World) -> None:
    r = ragline(
        "documents", "show", "--tenant", world.tenant, "--document", "tmp:deleted", "--json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["document"]["state"] == "deleted"
    whats = [e["what"] for e in out["timeline"]]
    assert "upsert" in whats and "delete" in whats
    r = ragline("documents", "show", "--tenant", world.tenant, "--document", "nope:x")
    assert r.returncode == 1


def test_explain_is_the_shared_explainer(world: World) -> None:
    r = ragline(
        "documents",
        "explain",
        "--tenant",
        world.tenant,
        "--groups",
        GROUP_A,
        "--document",
        "hr:payroll-b",
        "--query",
        "payroll bonus",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("outside_acl:")
    assert "BCANARY" not in r.stdout
