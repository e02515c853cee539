"""Golden files: every committed fixture parses to exactly its committed expected output.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/unit/parsing``
and review the diff of the ``*.expected.json`` files.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest
from parsing_helpers import FIXTURES, parse

from ragline.events import ParsedDocument

_NOT_INPUTS = {"make_fixtures.py", "README.md"}
INPUTS = sorted(
    p
    for p in FIXTURES.iterdir()
    if p.is_file() and not p.name.endswith(".expected.json") and p.name not in _NOT_INPUTS
)


def _expected_path(p: Path) -> Path:
    return p.with_name(p.name.rsplit(".", 1)[0] + ".expected.json")


def _dump(doc: ParsedDocument) -> str:
    return (
        json.dumps(doc.model_dump(mode="json", exclude_defaults=True), indent=2, ensure_ascii=False)
        + "\n"
    )


def test_every_format_has_a_fixture() -> None:
    formats = {parse(p.read_bytes(), p.name).format for p in INPUTS}
    assert formats == {"markdown", "html", "text", "pdf", "docx", "csv", "code", "transcript"}


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_golden(path: Path) -> None:
    actual = _dump(parse(path.read_bytes(), path.name))
    expected_path = _expected_path(path)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        expected_path.write_text(actual, encoding="utf-8")
        pytest.skip("golden file rewritten")
    assert expected_path.exists(), f"missing {expected_path.name}: run with UPDATE_GOLDEN=1"
    expected = expected_path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), "expected", "actual"
            )
        )
        pytest.fail(f"{path.name} parses differently from its golden file:\n{diff}")
    # the golden file itself is a valid ParsedDocument
    ParsedDocument.model_validate_json(expected)
