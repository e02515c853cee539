"""Which documents can have chunks of an older revision in OpenSearch (issue 29: a
backfill of new documents made one ``_delete_by_query`` with a forced refresh per
indexer batch that could never delete anything)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragline.store.os_bulk import older_revisions_possible


def test_first_revisions_need_no_stale_delete() -> None:
    assert older_revisions_possible([("a", 1), ("b", 1)]) == []


def test_later_revisions_keep_their_stale_delete() -> None:
    assert older_revisions_possible([("a", 1), ("b", 2), ("c", 7)]) == [("b", 2), ("c", 7)]


@given(st.lists(st.tuples(st.text(min_size=1, max_size=5), st.integers(1, 50))))
def test_nothing_with_an_older_revision_is_skipped(pairs: list[tuple[str, int]]) -> None:
    """The range query is ``revision < rev``: only rev 1 matches nothing (revisions
    start at 1), so only rev-1 pairs may be left out."""
    kept = older_revisions_possible(pairs)
    assert [p for p in pairs if p[1] > 1] == kept
