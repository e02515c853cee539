"""The scanner seals what it emits (``ragline.scan_seal``): the only minting code.

A meta or a document leaves the scanner sealed; everything after it checks the seal
(``ragline.events.seal_problem``) before it publishes an event or writes an index row.
No package but this one (and ``events``, which only verifies) may import
``ragline.scan_seal`` (import-linter contract ``scan-seal``), so text can only get a seal
by coming out of ``apply_scan``.
"""

from __future__ import annotations

from typing import TypeVar

from ragline.events import (
    DocumentMeta,
    EventBase,
    ParsedDocument,
    document_seal_input,
    meta_seal_input,
)
from ragline.scan_seal import digest

__all__ = ["as_scanned", "seal_document", "seal_meta"]

_E = TypeVar("_E", bound=EventBase)


def seal_meta(meta: DocumentMeta) -> DocumentMeta:
    """``meta`` as the scanner emits it: its text fields sealed."""
    return meta.model_copy(update={"scan_seal": digest("meta", meta_seal_input(meta))})


def seal_document(document: ParsedDocument) -> ParsedDocument:
    """``document`` as the scanner emits it, sealed."""
    seal = digest("document", document_seal_input(document))
    return document.model_copy(update={"scan_seal": seal})


def as_scanned(event: _E) -> _E:
    """``event`` (a post-scanner event built outside the pipeline from generated text:
    tests, benchmarks) with its meta and document sealed as if the scanner emitted them."""
    update: dict[str, object] = {}
    meta = getattr(event, "meta", None)
    if isinstance(meta, DocumentMeta):
        update["meta"] = seal_meta(meta)
    document = getattr(event, "document", None)
    if isinstance(document, ParsedDocument):
        update["document"] = seal_document(document)
    return event.model_copy(update=update)
