"""``make status`` (``ragline services status``) names what a user talks to: the query
API and the connector's change webhook with its port (issue 36 papercut)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.config import Settings
from ragline.platform.cli import _print_services


def test_status_names_the_webhook_and_the_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _print_services(Settings(state_dir=tmp_path))  # nothing runs: every service stopped
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines()}
    assert "webhook http://127.0.0.1:8081/v1/changes" in lines["connector"]
    assert "api http://127.0.0.1:8080/v1/search" in lines["query"]
    assert "webhook" not in lines["parser"]


def test_the_webhook_example_reads_the_names_make_up_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/clients.md's webhook example must run with what `make up` generated: every
    variable it requires is in .ragline/local.env (the rest have defaults)."""
    import re

    from ragline.platform.cli import local_secrets

    monkeypatch.delenv("RAGLINE_CONNECTOR_WEBHOOK_SECRET", raising=False)
    guide = (Path(__file__).resolve().parents[3] / "docs" / "clients.md").read_text()
    (block,) = re.findall(r"<!-- run: webhook -->\n```python\n(.*?)```", guide, re.S)
    required = set(re.findall(r"os\.environ\[\"([A-Z_]+)\"\]", block))
    local_secrets(Settings(state_dir=tmp_path))
    generated = {ln.split("=", 1)[0] for ln in (tmp_path / "local.env").read_text().splitlines()}
    assert required and required <= generated
    assert "http://127.0.0.1:8081" in block  # the connector's default webhook port
