"""Text hygiene shared by every format: newline and control-character normalization."""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "clean_inline",
    "clean_text",
    "first_line_chars",
    "metadata_title",
    "numbering_depth",
    "split_lines",
]

# C0/C1 control characters except tab and newline; lone surrogates (from JSON escapes)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_WS = re.compile(r"\s+")
# "1. Introduction", "2.3 Scope", "A.1 Appendix": section numbering before a title
_NUMBERED = re.compile(r"^((?:\d{1,3}|[A-Z])(?:\.\d{1,3})*)\.?\s+[A-Z]")
# what editors leave in a document's title property when nobody set one: "Untitled",
# "Document1", "Microsoft Word - report.docx", "slides.pptx"
_PLACEHOLDER_TITLE = re.compile(
    r"^(?:untitled(?:\s+document)?|document\s*\d*|microsoft\s+\w+\s+-\s+.*"
    r"|.*\.(?:docx?|pdf|pptx?|xlsx?|odt|rtf|txt|tex|indd))$",
    re.I,
)


def clean_text(text: str) -> str:
    """Unify newlines, turn control characters into spaces, replace lone surrogates, NFC.

    Control characters become spaces (not nothing) so words they separated stay apart;
    Postgres cannot store NUL and nothing downstream wants the others.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(" ", text)
    text = _SURROGATE.sub("\ufffd", text)
    return unicodedata.normalize("NFC", text)


def clean_inline(text: str) -> str:
    """Collapse all whitespace (newlines included) to single spaces: table cells, headings."""
    return _WS.sub(" ", text).strip()


def metadata_title(value: object) -> str | None:
    """A title from a document's own metadata (DOCX core properties, PDF Info), or None
    when it is empty or a placeholder an editor left: then the document's first heading
    (or at last its file name) names it instead."""
    if not isinstance(value, str):
        return None
    title = clean_inline(clean_text(value))
    return None if not title or _PLACEHOLDER_TITLE.match(title) else title


def split_lines(text: str) -> list[str]:
    """Lines of already cleaned text (only ``\\n`` separates lines, as in line numbers)."""
    return text.split("\n")


def numbering_depth(line: str) -> int | None:
    """Depth of a numbered section title ("2.1 Scope" -> 2), None if not numbered."""
    m = _NUMBERED.match(line.strip())
    return m.group(1).count(".") + 1 if m else None


def first_line_chars(text: str, limit: int = 200) -> str:
    """The first line of ``text`` cut to ``limit`` characters: signatures, symbols."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"
