"""Many small text items (blocks, table cells, titles) joined into one text and back.

Pattern detectors have a fixed cost per call, so a document's items are scanned as one
joined text and each span is mapped back to the item(s) it covers. A span that crosses
an item boundary (a pattern matching across the separator) is split into one piece per
item rather than dropped: over-redaction is acceptable, a partial leak is not.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

__all__ = ["Layout"]


class Layout:
    """Offsets of ``items`` inside ``text`` = ``SEP.join(items)``."""

    SEP = "\n\n"

    def __init__(self, items: Sequence[str]) -> None:
        self.items = tuple(items)
        starts: list[int] = []
        pos = 0
        for it in self.items:
            starts.append(pos)
            pos += len(it) + len(self.SEP)
        self.starts = starts
        self.text = self.SEP.join(self.items)

    def locate(self, start: int, end: int) -> Iterator[tuple[int, int, int]]:
        """``(item, local_start, local_end)`` pieces of the joined-text span ``[start, end)``."""
        if end <= start or not self.items:
            return
        i = max(bisect.bisect_right(self.starts, start) - 1, 0)
        while i < len(self.items) and self.starts[i] < end:
            s0 = self.starts[i]
            lo = max(start, s0) - s0
            hi = min(end, s0 + len(self.items[i])) - s0
            if hi > lo:
                yield i, lo, hi
            i += 1

    def segments(self, max_chars: int) -> Iterator[tuple[int, str]]:
        """Consecutive item groups of at most ``max_chars`` (one item may exceed it).

        Yields ``(offset in text, segment text)``; used to feed NER in bounded pieces.
        """
        if not self.items:
            return
        first = 0
        while first < len(self.items):
            last = first
            size = len(self.items[first])
            while (
                last + 1 < len(self.items)
                and size + len(self.SEP) + len(self.items[last + 1]) <= max_chars
            ):
                last += 1
                size += len(self.SEP) + len(self.items[last])
            yield self.starts[first], self.SEP.join(self.items[first : last + 1])
            first = last + 1
