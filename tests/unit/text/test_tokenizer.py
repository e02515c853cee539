"""The embedding model's own WordPiece tokenizer, offline."""

from __future__ import annotations

from ragline.text import TokenCounter
from ragline.text.tokenizer import TokenOffsets


def test_counts_exclude_special_tokens(counter: TokenCounter) -> None:
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count_many(["hello world", "", "error E1234"]) == [2, 0, 4]


def test_span_counts_are_additive_at_whitespace(counter: TokenCounter) -> None:
    text = "The gateway returned HTTP 503, then recovered. Données reçues: 42 MB."
    offs = counter.offsets(text)
    cut = text.index("then")
    assert offs.count(0, cut) + offs.count(cut, len(text)) == counter.count(text)
    assert offs.count(0, cut) == counter.count(text[:cut])


def test_cut_after_returns_the_end_of_the_nth_piece() -> None:
    offs = TokenOffsets([(0, 3), (4, 7), (8, 11)])
    assert offs.cut_after(0, 2) == 7
    assert offs.cut_after(4, 1) == 7
    assert offs.cut_after(0, 10) == 11
    assert offs.count(0, 7) == 2 and offs.count(5, 11) == 1


def test_truncate_keeps_a_prefix_within_the_budget(counter: TokenCounter) -> None:
    text = "one two three four five six"
    assert counter.truncate(text, 3) == "one two three"
    assert counter.truncate(text, 100) == text
    assert counter.truncate(text, 0) == ""
