"""The examples of docs/clients.md marked ``<!-- run -->`` run as written against the
real query service (one interpreter, each block in a fresh namespace)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from client_helpers import REPO, Seeded, child_env
from query_helpers import GROUP_A

pytestmark = pytest.mark.integration

_BLOCK = re.compile(r"<!-- run -->\n```python\n(.*?)```", re.S)

RUNNER = """
import sys, traceback
blocks = sys.stdin.read().split("\\n#--- next block ---\\n")
for i, code in enumerate(blocks):
    try:
        exec(compile(code, f"docs/clients.md block {i + 1}", "exec"), {"__name__": "__main__"})
    except BaseException:
        traceback.print_exc()
        sys.exit(f"block {i + 1} failed")
    print(f"--- block {i + 1} ok", flush=True)
"""


def test_the_guide_examples_run(query_url: str, seeded: Seeded) -> None:
    blocks = _BLOCK.findall((REPO / "docs" / "clients.md").read_text())
    assert len(blocks) >= 5  # client, async, langchain, llamaindex, mcp
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input="\n#--- next block ---\n".join(blocks),
        env=child_env(RAGLINE_URL=query_url, RAGLINE_TOKEN=seeded.token(GROUP_A)),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("ok") >= len(blocks)
    assert "Time off" in proc.stdout  # the first example found the seeded leave policy
