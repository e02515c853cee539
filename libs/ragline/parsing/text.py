"""Plain text: paragraphs separated by blank lines, with conservative heading heuristics."""

from __future__ import annotations

import re

from ragline.events import BlockKind, ParsedDocument

from .builder import BlockBuilder
from .settings import ParserSettings
from .textutil import numbering_depth, split_lines

__all__ = ["parse_text"]

_CAPS_LETTERS = re.compile(r"[A-Z]")
_TERMINAL = (".", "!", "?", ":", ";", ",")
_BULLET = re.compile(r"^\s*([-*•◦▪]|\d{1,3}[.)])\s+")


def _heading_level(line: str) -> int | None:
    """Level of a one-line paragraph that looks like a heading, else None."""
    s = line.strip()
    if len(s) > 80 or s.endswith(_TERMINAL):
        return None
    depth = numbering_depth(s)
    if depth is not None:
        return depth
    letters = [c for c in s if c.isalpha()]
    if len(letters) >= 4 and s.upper() == s and len(_CAPS_LETTERS.findall(s)) == len(letters):
        return 1
    return None


def parse_text(text: str, settings: ParserSettings, *, encoding: str | None) -> ParsedDocument:
    """One paragraph per blank-line-separated group.

    The first line of a group is a heading if it looks like one (numbered "2.1 Scope"
    or ALL CAPS, short, no final punctuation). Lines keep their breaks (only trailing
    whitespace is trimmed) so nothing but whitespace is ever lost; a group whose lines
    all start with a bullet is a list.
    """
    b = BlockBuilder(max_blocks=settings.max_blocks, max_chars=settings.max_chars)
    lines = split_lines(text)
    title: str | None = None
    shift = 0  # a title line on line 1 puts every other heading one level below it
    group: list[str] = []
    start = 0

    def flush(end: int) -> None:
        nonlocal title, shift
        if not group:
            return
        first = start
        bullets = all(_BULLET.match(g) for g in group)
        level = None if bullets else _heading_level(group[0])
        if level is not None:  # a heading line, alone or directly above its text
            if first == 0 and numbering_depth(group[0]) is None:
                title, shift, level = group[0].strip(), 1, 1
            else:
                level += shift
            b.heading(group[0], level, line_start=first + 1, line_end=first + 1)
            del group[0]
            first += 1
        if group:
            kind = BlockKind.LIST if all(_BULLET.match(g) for g in group) else BlockKind.PARAGRAPH
            b.add(kind, "\n".join(group), line_start=first + 1, line_end=end)
        group.clear()

    for i, line in enumerate(lines):
        if line.strip():
            if not group:
                start = i
            group.append(line.rstrip())
        else:
            flush(i)
    flush(len(lines))
    return b.build(format="text", title=title, encoding=encoding)
