"""``ragline scan file`` / ``ragline scan policy``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragline.cli import main


def test_scan_file_prints_summary_without_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "notes.md"
    f.write_text("Deploy key AKIAPTGZ4JFEBZ9SDO78.\n\nMail ops@acme-corp.com please.\n")
    policy = tmp_path / "p.yaml"  # no names: the test does not load spaCy
    policy.write_text("replace_defaults: true\nrules:\n  - name: t\n    pii: {contact: redact}\n")
    assert main(["scan", "file", str(f), "--policy", str(policy)]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out)
    assert summary["counts"] == {"pii:EMAIL_ADDRESS": 1, "secret:aws_access_key": 1}
    assert "AKIAPTGZ4JFEBZ9SDO78" not in out and "ops@acme-corp.com" not in out
    assert main(["scan", "file", str(f), "--policy", str(policy), "--show-text"]) == 0
    assert "Deploy key [REDACTED:aws_access_key]." in capsys.readouterr().out


def test_scan_policy_and_bad_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "policy", "--trust", "low"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["name"] == "default+low-trust" and body["plan"]["ner_entities"] == ["PERSON"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: [{name: x, pii: {SHOE_SIZE: redact}}]")
    assert main(["scan", "policy", "--policy", str(bad)]) == 2
    assert "SHOE_SIZE" in capsys.readouterr().err
