"""The committed schemas/ and docs/asyncapi.json match the models (run `make schemas`)."""

from __future__ import annotations

from pathlib import Path

from ragline.runtime.contracts import write_contracts

ROOT = Path(__file__).resolve().parents[3]


def test_generated_contracts_are_not_stale() -> None:
    stale = write_contracts(ROOT / "schemas", ROOT / "docs", check=True)
    assert stale == [], f"stale contracts, run `make schemas`: {stale}"


def test_stale_detection_fails_on_a_changed_file(tmp_path: Path) -> None:
    write_contracts(tmp_path / "schemas", tmp_path / "docs")
    assert write_contracts(tmp_path / "schemas", tmp_path / "docs", check=True) == []
    (tmp_path / "schemas" / "DocFetched.json").write_text("{}")
    assert write_contracts(tmp_path / "schemas", tmp_path / "docs", check=True) == [
        str(tmp_path / "schemas" / "DocFetched.json")
    ]
