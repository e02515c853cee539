"""Cut detection: block > paragraph > line > sentence > word."""

from __future__ import annotations

from ragline.chunking.boundaries import Strength, find_cuts


def _strength_at(text: str, marker: str, **kw: object) -> int:
    cuts = find_cuts(text, **kw)  # type: ignore[arg-type]
    pos = text.index(marker)
    return cuts.strengths[cuts.positions.index(pos)]


def test_strengths() -> None:
    text = "One two. Three four\nFive six\n\nSeven eight"
    assert _strength_at(text, "two") == Strength.WORD
    assert _strength_at(text, "Three") == Strength.SENTENCE
    assert _strength_at(text, "Five") == Strength.LINE
    assert _strength_at(text, "Seven") == Strength.PARAGRAPH
    cuts = find_cuts(text, block_starts=[text.index("Five")])
    assert cuts.strengths[cuts.positions.index(text.index("Five"))] == Strength.BLOCK
    assert cuts.positions[-1] == len(text) and cuts.strengths[-1] == Strength.END


def test_abbreviations_and_lowercase_continuations_are_not_sentence_ends() -> None:
    text = "Ask Dr. Smith, e.g. today. See J. Doe etc. and more. Then stop."
    assert _strength_at(text, "Smith") == Strength.WORD
    assert _strength_at(text, "Doe") == Strength.WORD
    assert _strength_at(text, "and") == Strength.WORD
    assert _strength_at(text, "Then") == Strength.SENTENCE


def test_cjk_sentence_marks_cut_without_spaces() -> None:
    text = "第一句。第二句！第三句"
    cuts = find_cuts(text)
    assert text.index("第二") in cuts.positions and text.index("第三") in cuts.positions


def test_code_cuts_keep_indentation_with_the_line() -> None:
    text = "def f():\n    a = 1\n\n    b = 2"
    cuts = find_cuts(text, sentences=False, line_starts=True)
    assert text.index("    b") in cuts.positions
    assert text.index("b = 2") not in cuts.positions
