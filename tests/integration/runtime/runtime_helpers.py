"""Events the runtime's integration tests publish (one builder, not a copy per test)."""

from __future__ import annotations

import base64

from ragline.events import INTERACTIVE, DocFetched, DocumentMeta, Lane
from ragline.hashing import content_hash


def markdown_fetched(
    tenant: str, doc: str, text: str | None = None, *, seq: int = 1, lane: Lane = INTERACTIVE
) -> DocFetched:
    """A fetched markdown document readable by group ``eng`` (``# <doc>`` + body by default)."""
    raw = (f"# {doc}\n\nbody" if text is None else text).encode()
    return DocFetched(
        tenant_id=tenant,
        document_id=doc,
        source_seq=seq,
        content_hash=content_hash(raw),
        meta=DocumentMeta(title=doc, mime_type="text/markdown", acl_groups=("eng",)),
        content_b64=base64.b64encode(raw).decode(),
        size_bytes=len(raw),
        priority=lane,
    )
