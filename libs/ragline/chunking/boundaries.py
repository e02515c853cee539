"""Where a text may be cut, and how good each cut is (structure first).

A cut is the offset of the first character after a whitespace run (so pieces never start
or end inside a word) plus a strength: block > paragraph > line > sentence > word. The
packer prefers the strongest cut that still fills a child reasonably.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

__all__ = ["Cuts", "Strength", "find_cuts"]


class Strength(IntEnum):
    WORD = 0
    SENTENCE = 1
    LINE = 2
    PARAGRAPH = 3
    BLOCK = 4  # between two blocks (or two transcript turns)
    END = 5  # end of the text


_WS = re.compile(r"\s+")
# a sentence ends with . ! ? … (optionally closed by quotes/brackets) before whitespace
_TERMINAL = re.compile(r"[.!?…][\"'”’)\]]*$")
_CJK_TERMINAL = re.compile(r"[。！？]")
_ABBREV = frozenset(
    """e.g i.e etc vs cf al approx dept fig no nr mr mrs ms dr prof st inc ltd co corp jr sr
    resp incl excl min max vol p pp ch sec art z.b u.a bzw usw""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class Cuts:
    """Sorted cut offsets and their strengths; ``positions[-1]`` is the end of the text."""

    positions: list[int]
    strengths: list[int]

    def index_after(self, pos: int) -> int:
        """Index of the first cut strictly after ``pos``."""
        return bisect_left(self.positions, pos + 1)

    def index_at_or_after(self, pos: int) -> int:
        return bisect_left(self.positions, pos)


def _is_sentence_end(text: str, ws_start: int, ws_end: int) -> bool:
    before = text[max(0, ws_start - 12) : ws_start]
    if not _TERMINAL.search(before):
        return False
    if ws_end < len(text) and text[ws_end].islower():
        return False  # "etc. and", "approx. five"
    word = before.split()[-1] if before.split() else ""
    stem = word.rstrip(".\"'”’)]").lower()
    abbreviation = stem in _ABBREV or (len(stem) == 1 and stem.isalpha())
    return not (abbreviation and before.rstrip("\"'”’)]").endswith("."))  # "Dr. Smith"


def find_cuts(
    text: str,
    *,
    sentences: bool = True,
    line_starts: bool = False,
    block_starts: Iterable[int] = (),
) -> Cuts:
    """All cuts of ``text``; ``block_starts`` are offsets where a block/turn begins.

    ``line_starts`` (code): a cut at a line break sits at the start of the next line, so
    the indentation stays with its line.
    """
    found: dict[int, int] = {}
    for m in _WS.finditer(text):
        start, end = m.span()
        if start == 0 or end >= len(text):
            continue
        newlines = m.group().count("\n")
        if line_starts and newlines:
            end = start + m.group().rindex("\n") + 1
        if newlines >= 2:
            strength = Strength.PARAGRAPH
        elif newlines == 1:
            strength = Strength.LINE
        elif sentences and _is_sentence_end(text, start, end):
            strength = Strength.SENTENCE
        else:
            strength = Strength.WORD
        found[end] = strength
    if sentences:
        for m in _CJK_TERMINAL.finditer(text):
            pos = m.end()
            if 0 < pos < len(text) and not text[pos].isspace():
                found[pos] = max(found.get(pos, 0), Strength.SENTENCE)
    for pos in block_starts:
        if 0 < pos < len(text):
            found[pos] = Strength.BLOCK
    found[len(text)] = Strength.END
    positions = sorted(found)
    return Cuts(positions=positions, strengths=[found[p] for p in positions])
