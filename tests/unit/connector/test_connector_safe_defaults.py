"""A newcomer's defaults: source names derived from the folder, files without readers
reported, and deletes a sync may not make on its own (issue 36, item 1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ragline.connector.fs_source import FilesystemSource, FsSourceConfig, derive_source_name
from ragline.connector.readers import no_readers_report
from ragline.connector.source import SourceItem
from ragline.connector.sync import build_plan, delete_refusal
from ragline.errors import ConfigError


class Listed:
    """A source that only lists (build_plan without --checksum reads nothing)."""

    name = "fs"
    tenant_id = "acme"

    def __init__(self, items: list[SourceItem]) -> None:
        self._items = items

    async def items(self) -> AsyncIterator[SourceItem]:
        for i in self._items:
            yield i


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("notes", "notes"),
        ("Team Notes", "team-notes"),
        ("Q3 -- Plans!", "q3-plans"),
        ("docs.v2", "docs.v2"),
        ("_private", "private"),
    ],
)
def test_source_name_is_derived_from_the_folder(tmp_path: Path, folder: str, expected: str) -> None:
    (tmp_path / folder).mkdir()
    assert derive_source_name(tmp_path / folder) == expected


def test_a_folder_without_a_usable_name_needs_source(tmp_path: Path) -> None:
    (tmp_path / "!!!").mkdir()
    with pytest.raises(ConfigError, match="--source"):
        derive_source_name(tmp_path / "!!!")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "team").mkdir(parents=True)
    (root / "open.md").write_text("# Open\n")
    (root / "team" / "_policy.yaml").write_text("acl_groups: [eng]\n")
    (root / "team" / "plan.md").write_text("# Plan\n")
    return root


def _source(root: Path, **kw: object) -> FilesystemSource:
    return FilesystemSource(FsSourceConfig(root=root, source="notes", tenant_id="acme", **kw))  # type: ignore[arg-type]


async def test_files_without_an_acl_are_named_with_the_fix(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    plan = await build_plan(_source(root), {}, progress=False)
    assert plan.no_readers == ["notes:open.md"]  # team/plan.md has readers from its policy
    lines = no_readers_report(plan.no_readers, root=root, tenant="acme")
    assert "1 document with no acl_groups" in lines[0] and "  notes:open.md" in lines
    assert any("_policy.yaml" in ln and "--default-groups" in ln for ln in lines)
    assert any("ragline documents no-readers --tenant acme" in ln for ln in lines)


async def test_default_groups_give_readers_only_where_no_policy_does(tmp_path: Path) -> None:
    src = _source(_tree(tmp_path), default_acl_groups=("all-staff",))
    docs = src.scan().docs
    assert docs["open.md"].meta.acl_groups == ("all-staff",)
    assert docs["team/plan.md"].meta.acl_groups == ("eng",)  # a policy still narrows
    assert (await build_plan(src, {}, progress=False)).no_readers == []


def test_a_source_owns_only_uris_under_its_own_root(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    src = _source(root)
    assert src.owns((root / "open.md").as_uri())
    assert src.owns(None)  # unknown: not provably foreign
    assert not src.owns((tmp_path / "notes-old" / "open.md").as_uri())  # a sibling prefix
    assert not src.owns("file:///srv/sample/handbook/a.md")
    web = _source(root, uri_prefix="https://share.example.com/notes/")
    assert web.owns("https://share.example.com/notes/open.md")
    assert not web.owns((root / "open.md").as_uri())


@pytest.mark.parametrize(
    ("deletes", "foreign", "live", "refused"),
    [
        ([], [], 10, None),
        (["fs:a"], [], 10, None),  # 10 %: a small share
        (["fs:a", "fs:b"], [], 10, "more than 10%"),
        (["fs:a"], ["fs:a"], 100, "not created from this source"),
        (["fs:a", "fs:b", "fs:c"], [], 3, "3 of the source's 3"),
    ],
)
def test_delete_refusal(
    deletes: list[str], foreign: list[str], live: int, refused: str | None
) -> None:
    why = delete_refusal(deletes, foreign, live, max_share=0.1)
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why and "--allow-deletes" in why


async def test_items_without_available_metadata_are_not_reported() -> None:
    held = SourceItem(document_id="fs:busy", source_seq=0, meta_hash="", available=False)
    unknown = SourceItem(document_id="fs:other", source_seq=1, meta_hash="m")  # says nothing
    src: Any = Listed([held, unknown])
    plan = await build_plan(src, {}, progress=False)
    assert plan.no_readers == []


class _Sink:
    def __init__(self) -> None:
        self.n = 0

    async def publish(self, topic: str, event: Any) -> None:
        self.n += 1


async def test_the_watcher_names_files_without_readers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ragline.connector.fs_watch import FsWatcher

    root = _tree(tmp_path)
    sink = _Sink()
    watcher = FsWatcher(_source(root), sink)
    with caplog.at_level("WARNING"):
        await watcher.poll_once()
    assert sink.n == 2  # published all the same: deny by default, reported
    assert watcher.no_readers == ["notes:open.md"]
    assert [r for r in caplog.records if "no readers" in r.getMessage()]
    caplog.clear()
    with caplog.at_level("WARNING"):
        await watcher.poll_once()  # the same list again: not logged again
    assert not [r for r in caplog.records if "no readers" in r.getMessage()]
    (root / "_policy.yaml").write_text("acl_groups: [all]\n")
    await watcher.poll_once()
    assert watcher.no_readers == []
