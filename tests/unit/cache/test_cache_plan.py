"""Which entries one doc.indexed event evicts (the plan; the SQL is tested on Postgres)."""

from __future__ import annotations

from typing import Any

from ragline.cache.invalidation import plan_invalidation
from ragline.events import DocIndexed, IndexAction


def event(action: str, **kw: Any) -> DocIndexed:
    base: dict[str, Any] = {
        "tenant_id": "acme",
        "document_id": "fs:a.md",
        "source_seq": 3,
        "action": IndexAction(action),
        "generation": 2,
        "chunk_count": 4,
    }
    base.update(kw)
    return DocIndexed(**base)


def test_skipped_events_evict_nothing() -> None:
    for action in ("upsert", "delete", "acl"):
        assert plan_invalidation(event(action, skipped=True), freshness="strict") is None


def test_upsert_strict_evicts_every_scope_that_sees_it_before_or_after() -> None:
    p = plan_invalidation(
        event("upsert", acl_groups_before=("eng",), acl_groups_after=("all", "eng")),
        freshness="strict",
    )
    assert p is not None
    assert p.reason == "upsert" and p.document_id == "fs:a.md"
    assert p.scope_groups == ("all", "eng")
    assert p.fence_groups == ("all", "eng")


def test_upsert_dependents_only_evicts_entries_citing_it() -> None:
    p = plan_invalidation(event("upsert", acl_groups_after=("eng",)), freshness="dependents")
    assert p is not None and p.scope_groups == () and p.fence_groups == ("eng",)


def test_delete_uses_the_groups_that_could_see_it() -> None:
    p = plan_invalidation(event("delete", acl_groups_before=("hr",)), freshness="strict")
    assert p is not None and p.reason == "delete" and p.scope_groups == ("hr",)


def test_acl_change_targets_scopes_whose_visibility_changed() -> None:
    p = plan_invalidation(
        event("acl", acl_groups_before=("eng", "hr"), acl_groups_after=("eng",)),
        freshness="dependents",
    )
    assert p is not None
    assert (p.reason, p.acl_before, p.acl_after) == ("acl", ("eng", "hr"), ("eng",))
    assert p.scope_groups == ()
    assert p.fence_groups == ("eng", "hr")


def test_no_groups_known_fences_the_whole_tenant() -> None:
    p = plan_invalidation(event("delete"), freshness="dependents")
    assert p is not None and p.fence_groups == ("*",)
