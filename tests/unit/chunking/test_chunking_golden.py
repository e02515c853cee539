"""Golden files, one per input format: ParsedDocument in, enriched chunks out.

Inputs: tests/fixtures/chunking/<name>.json (written by build_inputs.py). Expected:
<name>.golden.json next to it. After an intended change, regenerate with
``UPDATE_GOLDEN=1 pytest tests/unit/chunking/test_chunking_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragline.chunking import Chunker
from ragline.enrichment import Enricher, EnricherSettings
from ragline.events import DocChunked, DocumentMeta, ParsedDocument
from ragline.text import TokenCounter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "chunking"
INPUTS = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".golden.json"))


def _render(path: Path, chunker: Chunker, counter: TokenCounter) -> dict[str, Any]:
    data = json.loads(path.read_text())
    meta = DocumentMeta.model_validate(data["meta"])
    document = ParsedDocument.model_validate(data["document"])
    chunks = chunker.chunk(
        document,
        document_id=data["document_id"],
        content_hash=data["content_hash"],
        file_path=meta.uri,
    )
    event = DocChunked(
        tenant_id="golden",
        document_id=data["document_id"],
        content_hash=data["content_hash"],
        source_seq=1,
        meta=meta,
        chunks=tuple(chunks),
    )
    enriched = Enricher(counter, header_budget=40, settings=EnricherSettings()).enrich(event)
    return {
        "strategy_version": chunker.strategy_version,
        "chunks": [c.model_dump(mode="json", exclude_defaults=True) for c in enriched],
    }


def test_every_format_has_a_fixture() -> None:
    formats = {json.loads(p.read_text())["document"]["format"] for p in INPUTS}
    assert formats >= {"markdown", "html", "pdf", "csv", "code", "transcript", "text"}


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_golden(path: Path, chunker: Chunker, counter: TokenCounter) -> None:
    actual = _render(path, chunker, counter)
    golden = path.with_name(f"{path.stem}.golden.json")
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(json.dumps(actual, indent=1, ensure_ascii=False) + "\n")
    assert golden.exists(), f"missing {golden.name}: run with UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text())
