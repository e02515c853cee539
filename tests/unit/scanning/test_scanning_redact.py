"""Span merging and placeholder replacement, example-based and as properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.scanning.layout import Layout
from ragline.scanning.redact import Decision, placeholder, redact_text


def d(s: int, e: int, t: str = "x", *, redact: bool = True, priority: int = 1) -> Decision:
    kind = "secret" if priority == 0 else "pii"
    return Decision(start=s, end=e, type=t, label=f"{kind}:{t}", redact=redact, priority=priority)


def test_overlapping_spans_merge_into_their_union_secret_type_wins() -> None:
    text = "user=alice@example.com:hunter2xyz rest"
    out = redact_text(text, [d(5, 22, "EMAIL_ADDRESS"), d(11, 33, "password", priority=0)])
    assert out.text == f"user={placeholder('password')} rest"
    assert out.redactions == 1 and out.labels == ["secret:password"]


def test_tag_positions_shift_and_covered_tags_drop() -> None:
    text = "AKIA1234 then Bob then Carol"
    out = redact_text(
        text,
        [d(0, 8, "aws_access_key", priority=0), d(14, 17, "PERSON", redact=False),
         d(2, 6, "PERSON", redact=False)],
    )  # fmt: skip
    assert out.text.startswith(placeholder("aws_access_key"))
    (_label, s, e) = next(p for p in out.positions if p[0] == "pii:PERSON")
    assert out.text[s:e] == "Bob"
    assert out.kept_types == {"PERSON"}
    assert out.labels.count("pii:PERSON") == 1  # the covered one is gone


def test_duplicate_tag_reports_count_once() -> None:
    out = redact_text(
        "Call Ann now", [d(5, 8, "PERSON", redact=False), d(5, 8, "PERSON", redact=False)]
    )
    assert out.labels == ["pii:PERSON"] and out.text == "Call Ann now"


spans = st.lists(st.tuples(st.integers(0, 80), st.integers(1, 20)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="abcdefghij ", min_size=0, max_size=100), raw=spans)
def test_property_redacted_chars_are_gone_and_rest_is_kept(
    text: str, raw: list[tuple[int, int]]
) -> None:
    decisions = [d(s, min(s + n, len(text)), "t") for s, n in raw if s < len(text)]
    out = redact_text(text, decisions)
    covered = [False] * len(text)
    for x in decisions:
        for i in range(x.start, x.end):
            covered[i] = True
    # rebuild the expected text: each maximal overlapping group becomes one placeholder
    groups = sorted((x.start, x.end) for x in decisions if x.end > x.start)
    merged: list[list[int]] = []
    for s, e in groups:
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    expected, pos = [], 0
    for s, e in merged:
        expected += [text[pos:s], placeholder("t")]
        pos = e
    expected.append(text[pos:])
    assert out.text == "".join(expected)
    assert out.redactions == len(merged)
    for _, s, e in out.positions:
        assert out.text[s:e] == placeholder("t")


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.text(alphabet="ab\n ", max_size=15), min_size=1, max_size=6),
    a=st.integers(0, 120),
    n=st.integers(0, 40),
)
def test_property_layout_locate_covers_exactly_the_item_characters(
    items: list[str], a: int, n: int
) -> None:
    lay = Layout(items)
    start, end = min(a, len(lay.text)), min(a + n, len(lay.text))
    pieces = list(lay.locate(start, end))
    got = "".join(items[i][lo:hi] for i, lo, hi in pieces)
    expected = "".join(
        ch for k, ch in enumerate(lay.text[start:end], start)
        if any(s0 <= k < s0 + len(it) for s0, it in zip(lay.starts, items, strict=True))
    )  # fmt: skip
    assert got == expected
    assert all(0 <= lo < hi <= len(items[i]) for i, lo, hi in pieces)


@given(items=st.lists(st.text(max_size=30), max_size=20), limit=st.integers(1, 80))
def test_property_segments_partition_the_text(items: list[str], limit: int) -> None:
    lay = Layout(items)
    segs = list(lay.segments(limit))
    if not items:
        assert segs == []
        return
    assert Layout.SEP.join(s for _, s in segs) == lay.text
    for off, s in segs:
        assert lay.text[off : off + len(s)] == s
