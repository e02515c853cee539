"""The text and document-id rules of the query API: re-exported from
``ragline_client.text_rules`` (one definition, shared with the request models)."""

from __future__ import annotations

from ragline_client.text_rules import (
    DOCUMENT_ID_PATTERN,
    NO_NUL_PATTERN,
    NON_BLANK_PATTERN,
    NonBlankStr,
    SafeStr,
    check_non_blank,
    check_safe,
    is_blank,
    unsafe_reason,
    valid_document_id,
)

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
