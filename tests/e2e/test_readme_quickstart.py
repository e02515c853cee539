"""The README's "your own folder" quickstart, run as written against the session's
pipeline: the block is read from README.md (never retyped here); only the addresses a
test stack cannot share with `make up` are rewritten (the CLI of this interpreter for
``.venv/bin/ragline``, the query service's free port for ``localhost:8080``, and a
tenant of this test for ``demo``).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ragline.platform.stack.testing import unique_tenant

from .conftest import REPO_ROOT, Pipeline

pytestmark = pytest.mark.e2e

MARKER = "<!-- quickstart:own-folder"


def quickstart_block(readme: str) -> str:
    """The first ```bash block after the quickstart marker."""
    start = readme.index(MARKER)
    match = re.compile(r"```bash\n(.*?)```", re.S).search(readme, start)
    assert match is not None, "no bash block after the quickstart marker"
    return match.group(1)


def test_the_block_is_found_and_uses_the_documented_commands() -> None:
    block = quickstart_block((REPO_ROOT / "README.md").read_text())
    assert "ragline sync" in block and "/v1/search" in block
    assert "--default-groups" in block  # the defaults the paragraph below it explains


def test_own_folder_quickstart_as_written(pipeline: Pipeline, tmp_path: Path) -> None:
    block = quickstart_block((REPO_ROOT / "README.md").read_text())
    tenant = unique_tenant("readme")
    cli = f"{shlex.quote(sys.executable)} -m ragline.cli"
    script = (
        block.replace(".venv/bin/ragline", cli)
        .replace("localhost:8080", pipeline.query_url.removeprefix("http://"))
        .replace("--tenant demo", f"--tenant {tenant}")
    )
    assert script != block and "--tenant demo" not in script
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # the last command's output is the search response
    body = json.loads(done.stdout.strip().splitlines()[-1])
    results = body["results"]
    assert results, body
    top = results[0]
    assert top["document_id"] == "my-notes:parking.md"
    assert "level 2" in top["text"]
    assert top["citation"]["title"] == "Parking"  # the Markdown H1, not the file name
