"""The contextual header embedded with every child: ``<title> > <section path>`` plus the
version and effective date when the source gives them, e.g.
``Admin Guide > Install > Upgrades (v4.2, effective 2024-03-01)``.

It must fit the header budget in the embedding model's tokens (the chunker sized the
children so that header + child fit the model), so it is shortened step by step: middle
sections elided, then the title shortened, then cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from ragline.text.tokenizer import TokenCounter

__all__ = ["build_header"]

_SEP = " > "
_ELLIPSIS = "…"


def _suffix(version: str | None, effective: date | None) -> str:
    parts = []
    if version:
        parts.append(version if version[:1].lower() == "v" else f"v{version}")
    if effective:
        parts.append(f"effective {effective.isoformat()}")
    return f" ({', '.join(parts)})" if parts else ""


def build_header(
    counter: TokenCounter,
    *,
    budget: int,
    title: str | None,
    section_path: Sequence[str],
    version: str | None = None,
    effective_date: date | None = None,
) -> str:
    """The header, at most ``budget`` tokens; ``""`` when there is nothing to say."""
    path = [" ".join(p.split()) for p in section_path if p and p.strip()]
    title = " ".join(title.split()) if title else None
    if title and path and path[0].casefold() == title.casefold():
        path = path[1:]  # parsers often repeat the document title as the root section
    head = [title] if title else []
    suffix = _suffix(version, effective_date)
    candidates = [head + path]
    if len(path) > 2:
        candidates.append([*head, path[0], _ELLIPSIS, path[-1]])
    if len(path) > 1:
        candidates.append([*head, _ELLIPSIS, path[-1]])
    for parts in candidates:
        text = _SEP.join(parts) + suffix
        if counter.count(text) <= budget:
            return text.strip()
    last = candidates[-1]
    if title and len(last) > 1:  # shorten the title, keep the innermost section
        rest = _SEP + _SEP.join(last[1:]) + suffix
        room = budget - counter.count(rest) - 1
        if room >= 4:
            return (counter.truncate(title, room) + _ELLIPSIS + rest).strip()
    return counter.truncate(_SEP.join(last) + suffix, budget).strip()
