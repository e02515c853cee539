"""Sidecar and per-folder policy parsing, and how the layers combine."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.connector.fs_meta import MetaFileError, build_meta, load_policy, load_sidecar


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_policy_with_exclude(tmp_path: Path) -> None:
    p = load_policy(
        write(tmp_path / "_policy.yaml", "acl_groups: [eng]\nexclude: ['*.bak', 'drafts/*']\n"),
        "team",
    )
    assert p.meta == {"acl_groups": ["eng"]}
    assert p.excludes("team/notes.bak")
    assert p.excludes("team/drafts/x.md")
    assert p.excludes("team/sub/y.bak")  # by name anywhere below
    assert not p.excludes("team/notes.md")


def test_empty_files_are_empty_layers(tmp_path: Path) -> None:
    assert load_policy(write(tmp_path / "_policy.yaml", ""), "").meta == {}
    assert load_sidecar(write(tmp_path / "a.meta.yaml", "# nothing\n")) == ({}, False)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("acl_groups: [a\n", "invalid YAML at line"),
        ("- a\n- b\n", "must be a mapping"),
        ("acl_group: [a]\n", "unknown keys ['acl_group']"),
        ("exclude: '*.bak'\n", "exclude must be a list"),
    ],
)
def test_policy_errors_name_the_problem(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(MetaFileError, match=None) as info:
        load_policy(write(tmp_path / "_policy.yaml", text), "")
    assert fragment in str(info.value)


def test_sidecar_ignore_and_errors(tmp_path: Path) -> None:
    assert load_sidecar(write(tmp_path / "a.meta.yaml", "ignore: true\n"))[1] is True
    with pytest.raises(MetaFileError, match="ignore must be true or false"):
        load_sidecar(write(tmp_path / "b.meta.yaml", "ignore: maybe\n"))
    with pytest.raises(MetaFileError, match="unknown keys"):
        load_sidecar(write(tmp_path / "c.meta.yaml", "exclude: ['x']\n"))  # policy-only key


def test_layers_override_and_merge_metadata() -> None:
    meta = build_meta(
        {"source_type": "filesystem", "uri": "file:///x", "mime_type": "text/markdown"},
        [
            {
                "acl_groups": ["all-staff"],
                "classification": "internal",
                "metadata": {"a": 1, "b": 1},
            },
            {"acl_groups": ["hr"], "metadata": {"b": 2}},
            {"title": "T", "acl_groups": "hr-leads", "metadata": {"c": 3}},
        ],
    )
    assert meta.acl_groups == ("hr-leads",)  # replaced, a bare string accepted
    assert meta.classification == "internal"
    assert meta.metadata == {"a": 1, "b": 2, "c": 3}
    assert meta.title == "T" and meta.mime_type == "text/markdown"


def test_invalid_values_name_the_field() -> None:
    with pytest.raises(MetaFileError, match="classification"):
        build_meta({}, [{"classification": "top-secret"}])
    with pytest.raises(MetaFileError, match="acl_groups"):
        build_meta({}, [{"acl_groups": ["has space"]}])
    with pytest.raises(MetaFileError, match="expiry_date is before"):
        build_meta({}, [{"effective_date": "2025-02-01", "expiry_date": "2025-01-01"}])
