"""A readable title for a document that has none: the last path segment of its uri. The
enricher records it; the query service shows it in citations."""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

__all__ = ["title_from_uri"]


def title_from_uri(uri: str | None) -> str | None:
    """The last path segment of ``uri``, percent-decoded; None when there is none."""
    if not uri:
        return None
    name = PurePosixPath(unquote(urlsplit(uri).path)).name
    return name or None
