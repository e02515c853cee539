"""Issue 34: nothing on the default path imports torch. A fresh interpreter imports every
service's entry point and the CLI, ingests through the embedder and indexer stages and
answers a search through the query service's own app (no_torch_probe.py), then reports
which of torch / transformers / sentence_transformers it loaded: none may be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]

PROBE = Path(__file__).with_name("no_torch_probe.py")
REPO = Path(__file__).resolve().parents[3]


def test_default_path_never_imports_torch(stack, tenant) -> None:
    env = dict(os.environ)
    env.pop("RAGLINE_EMBEDDER_BACKEND", None)  # the deployed default, not the suite's choice
    paths = [str(REPO / "libs"), str(REPO), str(REPO / "clients/python/src")]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(PROBE), tenant],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == "onnx-int8"
    assert len(report["services"]) == 9  # every service's entry point was imported
    assert report["hit"] == "probe:vpn"  # ingest and search really ran
    assert report["forbidden"] == []
