"""``ragline chunk FILE``: the preview command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragline.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "chunking"


def test_preview_a_parsed_document_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(FIXTURES / "transcript_call.json"), "--parents"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("transcript: 7 blocks")
    assert "parent    0 transcript" in out and "Support call 2024-03-12" in out


def test_preview_a_markdown_file_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\n## Install\n\nRun the installer, then check error E1234.\n")
    assert main(["chunk", str(doc), "--json"]) == 0
    chunks = json.loads(capsys.readouterr().out)
    child = next(c for c in chunks if c["level"] == "child")
    assert child["section_path"][-1] == "Install"
    assert child["enrichment"]["entities"]["error_code"] == ["E1234"]


def test_a_missing_file_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", "/nonexistent/file.md"]) == 2
    assert "nonexistent" in capsys.readouterr().err
