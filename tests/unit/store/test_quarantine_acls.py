"""The quarantined versions' ACL log (lifetest ACL-3): bounded, and never wider for any
version than the exact intersection of the entries newer than it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragline.order import ContentKey
from ragline.store.quarantine_acls import MAX_ENTRIES, QuarantineAcl, merge_entries

GROUPS = ("g1", "g2", "g3", "g4")


def entry(seq: int, groups: tuple[str, ...], cls: str | None = "internal") -> QuarantineAcl:
    return QuarantineAcl(ContentKey(seq, 0, f"h{seq}"), tuple(sorted(groups)), cls)


def test_an_entry_is_kept_once_and_in_key_order() -> None:
    log = merge_entries([], entry(3, ("g2",)))
    log = merge_entries(log, entry(2, ("g1",)))
    assert [e.key.seq for e in log] == [2, 3]
    assert merge_entries(log, entry(3, ("g2",))) == log
    again = QuarantineAcl.from_json(log[0].to_json())
    assert again == log[0]


@given(
    st.lists(
        st.tuples(
            st.integers(1, 60),
            st.sets(st.sampled_from(GROUPS)),
            st.sampled_from(["public", "internal", "confidential", "restricted"]),
        ),
        max_size=40,
    ),
    st.integers(0, 61),
)
def test_the_bounded_log_never_narrows_less_than_the_exact_one(
    raw: list[tuple[int, set[str], str]], version: int
) -> None:
    exact: dict[int, QuarantineAcl] = {}
    log: list[QuarantineAcl] = []
    for seq, groups, cls in raw:
        e = entry(seq, tuple(groups), cls)
        exact.setdefault(seq, e)
        log = merge_entries(log, e)
    assert len(log) <= MAX_ENTRIES
    key = ContentKey(version, 0, "v")
    want = set(GROUPS)
    for e in exact.values():
        if e.key > key:
            want &= set(e.groups)
    got = set(GROUPS)
    for e in log:
        if e.key > key:
            got &= set(e.groups)
    assert got <= want
    if len(exact) <= MAX_ENTRIES:
        assert got == want
