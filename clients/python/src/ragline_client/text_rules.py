"""Text the ragline query API accepts: no NUL (Postgres text cannot hold it) and no lone
surrogates (no UTF-8 encoding exists for them), so every value a client sends can reach
every backend. The JSON Schema pattern says the same for generated clients; the
surrogate half cannot be written in it (JSON text cannot carry a lone surrogate in
valid UTF-8, so only escapes reach the server, which refuses them here).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

__all__ = [
    "DOCUMENT_ID_PATTERN",
    "NON_BLANK_PATTERN",
    "NO_NUL_PATTERN",
    "NonBlankStr",
    "SafeStr",
    "check_non_blank",
    "check_safe",
    "is_blank",
    "unsafe_reason",
    "valid_document_id",
]

# JSON Schema (ECMA-262) and Python agree on these two
NO_NUL_PATTERN = "^[^\\u0000]*$"
NON_BLANK_PATTERN = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"
_SURROGATE = re.compile("[\ud800-\udfff]")
_NON_BLANK = re.compile(r"\S")


def unsafe_reason(value: str) -> str | None:
    """Why ``value`` cannot be accepted, or None."""
    if "\x00" in value:
        return "must not contain NUL (U+0000)"
    if _SURROGATE.search(value):
        return "must not contain lone surrogates (U+D800..U+DFFF)"
    return None


def check_safe(value: str) -> str:
    reason = unsafe_reason(value)
    if reason is not None:
        raise ValueError(reason)
    return value


def is_blank(value: str) -> bool:
    """No non-whitespace character (the same rule as ``NON_BLANK_PATTERN``)."""
    return _NON_BLANK.search(value) is None


def check_non_blank(value: str) -> str:
    check_safe(value)
    if is_blank(value):
        raise ValueError("must contain a non-whitespace character")
    return value


SafeStr = Annotated[str, AfterValidator(check_safe)]
NonBlankStr = Annotated[str, AfterValidator(check_non_blank)]


# The intake contract's document id (ragline.events: ``<source>:<external id>``) with the
# whitespace class spelled out, so Python, Rust (pydantic) and ECMA-262 (JSON Schema)
# read it alike, and without NUL, which Postgres cannot store.
_WS = (
    "\\t\\n\\u000b\\u000c\\r \\u0085\\u00a0\\u1680"
    "\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
DOCUMENT_ID_PATTERN = f"^[a-z0-9][a-z0-9_.-]{{0,62}}:[^{_WS}\\u0000][^\\n\\u0000]{{0,511}}$"
_DOCUMENT_ID = re.compile(DOCUMENT_ID_PATTERN)


def valid_document_id(value: str) -> bool:
    """A full match (``$`` alone would let a trailing newline through)."""
    return _DOCUMENT_ID.fullmatch(value) is not None
