"""The embedding model's own WordPiece tokenizer, offline."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

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


_WORDS = (
    "The",
    "gateway",
    "returned",
    "HTTP",
    "503",
    "Données",
    "reçues",
    "β-cells",
    "IL-6",
    "服务",
    "エラー",
    "오류",
    "naïve",
    "e\u0301",
    "\u200b",
    "\ufffd",
    "\x00",
    "ﬁ",
    "Ⅻ",
    "x" * 120,
    "tab\there",
    "a\r\nb",
    "😀",
    "ſtatus",
    "",
    " ",
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(st.lists(st.sampled_from(_WORDS) | st.text(max_size=12)), max_size=6))
@example(texts=[["x" * 120], [], ["\x00", "\ufffd"]])
def test_counts_are_the_tracked_encodings_lengths(
    counter: TokenCounter, texts: list[list[str]]
) -> None:
    """``count``/``count_many`` encode without tracking offsets (``encode_batch_fast``,
    issue 35): the same number of pieces as the offset-tracking ``encode``."""
    joined = [" ".join(t) for t in texts]
    tok = counter._tok
    expected = [len(tok.encode(t, add_special_tokens=False).ids) if t else 0 for t in joined]
    assert counter.count_many(joined) == expected
    assert [counter.count(t) for t in joined] == expected


def test_counts_on_real_text_are_the_tracked_encodings_lengths(counter: TokenCounter) -> None:
    corpus = Path(os.environ.get("RAGLINE_SCIFACT_DIR", "/nonexistent")) / "corpus.jsonl"
    texts = ["The gateway returned HTTP 503, then recovered. Données reçues: 42 MB."]
    if corpus.is_file():
        with corpus.open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for _, line in zip(range(200), fh, strict=False)]
    tok = counter._tok
    assert counter.count_many(texts) == [
        len(tok.encode(t, add_special_tokens=False).ids) for t in texts
    ]
