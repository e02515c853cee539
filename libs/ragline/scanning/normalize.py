"""The view detection runs on: zero-width characters removed, NFKC, look-alikes folded.

``AKIA\u200bPTGZ...`` (a zero-width space inside an AWS key), ``ｇｈｐ_...`` (fullwidth
letters) or ``аdmin@exаmple.com`` (Cyrillic ``а``) pass every pattern written for the
plain form, yet the plain form is what a reader, a tokenizer or a search for the value
finds once the invisible or exotic characters are stripped. Detection therefore runs on
a normalized copy of each text, and every span found there is mapped back to the
original text, so redaction removes the original characters (invisible ones included).

Soft line wraps are removed in the view too (issue 31): a string literal continued on
the next line (``"AKIAPTGZ4J" +`` / ``"FEBZ9SDO78"``), a long token broken by a newline
(``AKIAPTGZ4J`` / ``FEBZ9SDO78``, a wrapped base64 or hex run) and digit groups broken
between lines (``4111 1111 1111`` / ``1111``) are whole in the view, so a secret or card
number is found whole and redacted in both original lines.

Pure ASCII text without a soft wrap (the common case) is its own view: no copy, no map.
Otherwise each non-ASCII character is normalized on its own (NFKC per character, so a
span maps back to whole original characters), each soft wrap is one removed segment,
and the map is a list of breakpoints.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["ZERO_WIDTH", "NormalizedText", "normalize"]

# invisible characters that split a token without a visible trace
ZERO_WIDTH = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u200b\u200c\u200d"
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067"
    "\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f\u3164\ufe00\ufe01\ufe02\ufe03\ufe04"
    "\ufe05\ufe06\ufe07\ufe08\ufe09\ufe0a\ufe0b\ufe0c\ufe0d\ufe0e\ufe0f\ufeff\uffa0"
)
# Cyrillic and Greek letters NFKC leaves alone but a reader takes for Latin ones
_CONFUSABLE = str.maketrans(
    "АВСЕНІЈКМОРЅТХУасеіјоррѕхуԁһԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριν",
    "ABCEHIJKMOPSTXYaceijoppsxydhqwABEZHIKMNOPTYXaopiv",
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# soft wraps, removed in the view: a quoted string continued by ``+`` on the next line;
# a newline inside a token (the line ends in 10+ token characters, the next line starts
# with 4+ holding a digit, not a word, and is not a new ``name=``/``name:``); a newline
# between digit groups (a card or account number wrapped)
_SOFT_WRAP = re.compile(
    r"""(["'])[ \t]*\+[ \t]*\r?\n[ \t]*\1"""
    # (not when the next line starts a new assignment: ``KEY=...`` / ``key: ...``)
    r"|(?<=[A-Za-z0-9+/_-]{10})\r?\n[ \t]*(?=[A-Za-z0-9+/=_-]{4})(?=[A-Za-z+/=_-]*\d)"
    r"(?![A-Za-z0-9_.-]+[ \t]*[=:])"
    r"|(?<=\d{4}[ -]\d{4})\r?\n[ \t]*(?=\d{4}(?!\d))"
)


def _char_view(ch: str) -> str:
    if ch in ZERO_WIDTH or (unicodedata.category(ch) == "Cf" and ch not in "\u00a0"):
        return ""
    out = unicodedata.normalize("NFKC", ch).translate(_CONFUSABLE)
    if all(c in ZERO_WIDTH for c in out):
        return ""
    return out


class NormalizedText:
    """``text`` (normalized) plus the map of its offsets back to ``original``.

    The map is a sorted list of breakpoints ``(view offset, original offset, linear)``:
    inside a linear (ASCII) segment offsets move together; a non-linear segment is one
    original character whose view is zero or more characters.
    """

    __slots__ = ("_orig", "_view", "_width", "original", "text")

    def __init__(
        self,
        original: str,
        text: str,
        view_starts: Sequence[int] = (),
        orig_starts: Sequence[int] = (),
        widths: Sequence[int] = (),
    ) -> None:
        self.original = original
        self.text = text
        self._view = list(view_starts)
        self._orig = list(orig_starts)
        self._width = list(widths)  # original width of a segment; 0 = linear (ASCII run)

    @property
    def identity(self) -> bool:
        return not self._view

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """The original span covering the view span ``[start, end)``."""
        if self.identity:
            return start, end
        lo = self._point(start, end=False)
        if end <= start:
            return lo, lo
        return lo, max(lo, self._point(end, end=True))

    def _point(self, pos: int, *, end: bool) -> int:
        # the segment holding view char ``pos`` (for an end: the char before it)
        probe = pos - 1 if end and pos > 0 else pos
        i = bisect.bisect_right(self._view, probe) - 1
        if i < 0:
            return 0
        v0, o0, w = self._view[i], self._orig[i], self._width[i]
        if w == 0:  # linear ASCII run
            return o0 + (pos - v0)
        return o0 + w if end else o0


def normalize(original: str) -> NormalizedText:
    wraps = [m.span() for m in _SOFT_WRAP.finditer(original)] if "\n" in original else []
    if not wraps and original.isascii():
        return NormalizedText(original, original)
    parts: list[str] = []
    view_starts: list[int] = []
    orig_starts: list[int] = []
    widths: list[int] = []
    vpos = 0
    pos = 0
    changed = bool(wraps)
    # non-ASCII runs and soft wraps in order (a wrap is ASCII: they never overlap)
    marks = sorted(
        [(s, e, True) for s, e in wraps]
        + [(m.start(), m.end(), False) for m in _NON_ASCII.finditer(original)]
    )
    for start, end, is_wrap in marks:
        if start > pos:
            parts.append(original[pos:start])
            view_starts.append(vpos)
            orig_starts.append(pos)
            widths.append(0)
            vpos += start - pos
        if is_wrap:  # one removed segment of the wrap's width
            view_starts.append(vpos)
            orig_starts.append(start)
            widths.append(end - start)
        else:
            for k, ch in enumerate(original[start:end]):
                v = _char_view(ch)
                changed = changed or v != ch
                parts.append(v)
                view_starts.append(vpos)
                orig_starts.append(start + k)
                widths.append(1)
                vpos += len(v)
        pos = end
    if not changed:
        return NormalizedText(original, original)
    if pos < len(original):
        parts.append(original[pos:])
        view_starts.append(vpos)
        orig_starts.append(pos)
        widths.append(0)
    return NormalizedText(original, "".join(parts), view_starts, orig_starts, widths)
