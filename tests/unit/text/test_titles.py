"""The fallback title of a document without one (``ragline.text.titles``)."""

from __future__ import annotations

from ragline.text import title_from_uri


def test_title_from_uri() -> None:
    assert title_from_uri("file:///docs/admin%20guide.md") == "admin guide.md"
    assert title_from_uri("https://x.example/a/b/") == "b"
    assert title_from_uri(None) is None
