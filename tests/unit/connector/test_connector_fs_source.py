"""Filesystem source: what a scan finds, ids, seqs, metadata layering, events."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from ragline.connector.fs_source import FilesystemSource, FsSourceConfig
from ragline.errors import ConfigError
from ragline.hashing import content_hash

FIXTURE = Path(__file__).parents[2] / "fixtures" / "connector" / "tree"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURE, root)
    t = 1_700_000_000_000_000_000
    for i, p in enumerate(sorted(root.rglob("*"))):
        if p.is_file():
            os.utime(p, ns=(t + i, t + i))
    return root


def source(root: Path, **kw: object) -> FilesystemSource:
    return FilesystemSource(FsSourceConfig(root=root, source="share", tenant_id="acme", **kw))  # type: ignore[arg-type]


def test_scan_finds_documents_not_metadata_hidden_or_excluded(tree: Path) -> None:
    scan = source(tree).scan()
    assert sorted(scan.docs) == [
        "handbook/hr/salary-bands.csv",
        "handbook/leave-policy.md",
        "product/install-guide.md",
    ]
    assert scan.skipped["excluded"] == 1  # install-guide.md.bak
    assert scan.skipped["ignored"] == 1  # old-notes.txt via its sidecar
    assert not scan.held and not scan.errors


def test_ids_metadata_and_policy_layers(tree: Path) -> None:
    docs = source(tree).scan().docs
    guide = docs["product/install-guide.md"]
    assert guide.document_id == "share:product/install-guide.md"
    m = guide.meta
    assert m.source_type == "filesystem" and m.mime_type == "text/markdown"
    assert m.uri == (tree / "product/install-guide.md").resolve().as_uri()
    assert (m.title, m.version, m.series_id) == (
        "Widget installation guide",
        "4.2",
        "widget-install-guide",
    )
    assert str(m.effective_date) == "2025-03-01"
    assert m.acl_groups == ("all-staff",) and m.trust == "high"
    assert m.metadata == {"department": "general", "product": "widget"}
    hr = docs["handbook/hr/salary-bands.csv"].meta
    assert hr.acl_groups == ("hr",) and hr.classification == "confidential"
    assert hr.metadata == {"department": "hr"}


def test_source_seq_is_newest_mtime_of_file_sidecar_and_policies(tree: Path) -> None:
    src = source(tree)
    before = src.scan().docs["product/install-guide.md"].source_seq
    later = before + 5_000_000_000
    os.utime(tree / "product/install-guide.md.meta.yaml", ns=(later, later))
    assert src.scan().docs["product/install-guide.md"].source_seq == later
    latest = later + 1
    os.utime(tree / "_policy.yaml", ns=(latest, latest))
    docs = src.scan().docs
    assert all(d.source_seq == latest for d in docs.values())


def test_broken_policy_holds_its_subtree_only(tree: Path) -> None:
    (tree / "handbook/hr/_policy.yaml").write_text("acl_groups: [hr\n")
    scan = source(tree).scan()
    assert scan.held == {"handbook/hr/salary-bands.csv"}
    assert "handbook/hr/salary-bands.csv" not in scan.docs
    assert "handbook/leave-policy.md" in scan.docs
    assert any("invalid YAML" in e for e in scan.errors)


def test_unsettled_files_are_held(tree: Path) -> None:
    (tree / "new.md").write_text("being written")
    scan = source(tree, settle_s=60.0).scan()
    assert "new.md" in scan.held and "new.md" not in scan.docs


def test_events_inline_and_by_reference(tree: Path) -> None:
    src = source(tree)
    doc = src.scan().docs["handbook/leave-policy.md"]
    data = src.read(doc)
    assert data is not None
    ev = src.upsert_event_for(doc, data)
    assert base64.b64decode(ev.content_b64 or "") == data
    assert ev.content_hash == content_hash(data) and ev.source_seq == doc.source_seq
    assert ev.event_id == src.upsert_event_for(doc, data).event_id  # deterministic
    ref = source(tree, by_reference=True).upsert_event_for(doc, data)
    assert ref.content_ref is not None and ref.content_ref.kind == "file"
    assert Path(ref.content_ref.location) == doc.path
    d = src.delete_event(doc.document_id, stored_seq=4 * 10**18)
    assert d.source_seq == 4 * 10**18 + 1
    acl = src.acl_event(doc)
    assert acl.acl_groups == ("all-staff",) and acl.source_seq == doc.source_seq


def test_read_refuses_a_file_changed_since_the_scan(tree: Path) -> None:
    src = source(tree)
    doc = src.scan().docs["handbook/leave-policy.md"]
    (tree / "handbook/leave-policy.md").write_text("changed meanwhile, longer than before")
    assert src.read(doc) is None


def test_uri_prefix_and_bad_config(tree: Path) -> None:
    doc = (
        source(tree, uri_prefix="https://share.example.com/")
        .scan()
        .docs["handbook/leave-policy.md"]
    )
    assert doc.meta.uri == "https://share.example.com/handbook/leave-policy.md"
    with pytest.raises(ConfigError):
        FilesystemSource(FsSourceConfig(root=tree, source="Bad Name", tenant_id="acme"))
    with pytest.raises(ConfigError):
        source(tree / "missing").scan()


def test_symlinks_leaving_the_root_are_skipped(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not part of the share")
    (tree / "product" / "escape.md").symlink_to(outside)
    (tree / "product" / "alias.md").symlink_to(tree / "product" / "install-guide.md")
    scan = source(tree).scan()
    assert "product/escape.md" not in scan.docs and scan.skipped["outside_root"] == 1
    assert "product/alias.md" in scan.docs


def test_idle_rescan_reuses_parsed_metadata_until_a_file_changes(tree: Path) -> None:
    src = source(tree)
    first = src.scan().docs["product/install-guide.md"]
    again = src.scan().docs["product/install-guide.md"]
    assert again.meta is first.meta  # from the cache, not re-parsed
    sidecar = tree / "product/install-guide.md.meta.yaml"
    sidecar.write_text(sidecar.read_text() + "title: Renamed\n")
    assert src.scan().docs["product/install-guide.md"].meta.title == "Renamed"
    (tree / "_policy.yaml").write_text("acl_groups: [everyone]\n")
    assert src.scan().docs["product/install-guide.md"].meta.acl_groups == ("everyone",)
