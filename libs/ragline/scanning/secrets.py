"""Secret detection: detect-secrets' plugins plus ragline's own patterns, as exact spans.

Both run over a document's joined text (``Layout``). detect-secrets answers per line
with a value; this module turns each answer into spans (every occurrence of the value on
its line, widened to the enclosing token), so redaction removes the whole secret even
when a plugin reports only a prefix. A private-key header that no block pattern covers
takes its whole paragraph with it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from ragline.scanning import _detect_secrets
from ragline.scanning.layout import Layout
from ragline.scanning.model import Finding, FindingKind
from ragline.scanning.secret_patterns import (
    check_deadline,
    find_pattern_secrets,
    looks_like_placeholder,
)

__all__ = ["SecretDetector"]

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_HEX = frozenset("0123456789abcdef")


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and line[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(line) and line[end] in _TOKEN_CHARS:
        end += 1
    return start, end


_SECRET_WORD = re.compile(r"key|secret|token|pass|pwd|auth|cred|sig", re.IGNORECASE)
_GENERIC_TYPES = frozenset({"password", "connection_password"})


def _plausible(type_: str, value: str, line: str) -> bool:
    """Second opinion on detect-secrets' generic plugins (vendor formats pass as is).

    Keyword and URL-credential hits that are placeholders (``USER:PASSWORD@HOST``) are
    dropped; a quoted hex string is a secret only with a secret-ish word on its line,
    since on its own it is an ETag, a checksum or a commit id far more often than a key.
    """
    if type_ in _GENERIC_TYPES:
        return not looks_like_placeholder(value)
    if type_ == "high_entropy_string" and all(c in _HEX for c in value.lower()):
        return bool(_SECRET_WORD.search(line))
    return True


MAX_LINE = 2000


def _segments(text: str) -> tuple[list[str], list[int]]:
    """Lines of ``text`` with their offsets; lines over ``MAX_LINE`` are cut at whitespace.

    Several detect-secrets filters rescan the whole line for every hit, which is
    quadratic on a long single-line document (a minified page, a URL list). Secrets
    contain no whitespace, so cutting there loses none; the keyword plugin may lose a
    ``password = value`` split exactly at the cut, which the own patterns (run on the
    uncut text) still find.
    """
    lines: list[str] = []
    offsets: list[int] = []
    pos = 0
    for ln in text.split("\n"):
        start = 0
        while len(ln) - start > MAX_LINE:
            cut = ln.rfind(" ", start + MAX_LINE // 2, start + MAX_LINE)
            cut = cut + 1 if cut > 0 else start + MAX_LINE
            lines.append(ln[start:cut])
            offsets.append(pos + start)
            start = cut
        lines.append(ln[start:])
        offsets.append(pos + start)
        pos += len(ln) + 1
    return lines, offsets


_WINDOW_LINES = 256


class _Intervals:
    """Sorted, merged ``[start, end]`` intervals with a logarithmic overlap test."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        self._starts = [s for s, _ in merged]
        self._ends = [e for _, e in merged]

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._starts, end) - 1
        return i >= 0 and self._ends[i] >= start


def _scan_windows(
    lines: list[str], deadline: float | None, *, fast: bool = True
) -> Iterator[tuple[int, str, str]]:
    """detect-secrets over ``lines`` in windows of ``_WINDOW_LINES``, the deadline checked
    between windows (a window is at most 256 lines of at most ``MAX_LINE`` characters)."""
    for first in range(0, len(lines), _WINDOW_LINES):
        check_deadline(deadline)
        window = lines[first : first + _WINDOW_LINES]
        for idx, type_, value in _detect_secrets.scan_lines(window, fast=fast):
            yield first + idx, type_, value


class SecretDetector:
    """Stateless apart from detect-secrets' process-global configuration (done in ``load``).

    ``fast=False`` hands every line to detect-secrets (the reference the fast path is
    tested against: ``_detect_secrets`` docstring); the findings are the same."""

    def __init__(self, *, fast: bool = True) -> None:
        self.fast = fast

    def load(self) -> None:
        _detect_secrets.configure()

    def detect(self, layout: Layout, *, deadline: float | None = None) -> list[Finding]:
        """Raises ``ScanDeadline`` once ``deadline`` (``time.monotonic()``) has passed."""
        text = layout.text
        spans: list[tuple[int, int, str, str]] = [
            (s, e, t, "pattern") for s, e, t in find_pattern_secrets(text, deadline=deadline)
        ]
        spans.extend(self._detect_secrets_spans(text, spans, deadline))
        out: list[Finding] = []
        for s, e, t, det in spans:
            for item, lo, hi in layout.locate(s, e):
                out.append(
                    Finding(
                        item=item, start=lo, end=hi, kind=FindingKind.SECRET, type=t,
                        detector=det,
                    )
                )  # fmt: skip
        return out

    def _detect_secrets_spans(
        self, text: str, known: list[tuple[int, int, str, str]], deadline: float | None = None
    ) -> Iterator[tuple[int, int, str, str]]:
        lines, offsets = _segments(text)
        covered = _Intervals([(s, e) for s, e, t, _ in known if t == "private_key"])
        blanks: list[int] | None = None
        for idx, type_, value in _scan_windows(lines, deadline, fast=self.fast):
            line = lines[idx]
            base = offsets[idx]
            if type_ == "private_key":
                if covered.overlaps(base, base + len(line)):
                    continue
                if blanks is None:  # found once: a search per hit would be quadratic
                    blanks = [m.start() for m in _BLANK_LINE.finditer(text)]
                k = bisect.bisect_left(blanks, base)
                yield base, (blanks[k] if k < len(blanks) else len(text)), type_, "detect-secrets"
                continue
            if not _plausible(type_, value, line):
                continue
            found = False
            start = line.find(value)
            while start >= 0:
                found = True
                lo, hi = _widen(line, start, start + len(value))
                yield base + lo, base + hi, type_, "detect-secrets"
                start = line.find(value, start + len(value))
            if not found:  # the plugin normalised the value: take the line, keep indentation
                stripped = len(line) - len(line.lstrip())
                yield base + stripped, base + len(line.rstrip()), type_, "detect-secrets"
