"""OpenSearch index per tenant: naming, mappings (English analyzer) and creation.

One index per tenant so a hidden tenant never shapes another tenant's BM25 term
statistics. Only child chunks are indexed (parents are fetched from Postgres for
expansion); every filter the query side applies before ranking is a keyword/date/bool
field here, denormalized from the document.
"""

from __future__ import annotations

import re
from typing import Any

from opensearchpy import AsyncOpenSearch

from ragline.errors import PermanentError
from ragline.store.os_client import os_errors

__all__ = ["MAPPING_VERSION", "chunk_mapping", "ensure_index", "index_name", "tenant_of_index"]

MAPPING_VERSION = 1
_TENANT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")

_KEYWORD = {"type": "keyword"}
_ENGLISH = {"type": "text", "analyzer": "english"}


def index_name(prefix: str, tenant_id: str) -> str:
    """``{prefix}-{tenant}``; tenant ids are already lowercase slugs (events.py)."""
    if not _TENANT_RE.match(tenant_id):
        raise PermanentError("tenant id is not a valid index suffix")
    return f"{prefix}-{tenant_id}"


def tenant_of_index(prefix: str, name: str) -> str | None:
    head = f"{prefix}-"
    if not name.startswith(head):
        return None
    tenant = name[len(head) :]
    return tenant if _TENANT_RE.match(tenant) else None


def chunk_mapping() -> dict[str, Any]:
    """Index settings + strict mappings of a tenant index (field names: docs/indexing.md)."""
    return {
        "settings": {"number_of_shards": 1, "refresh_interval": "1s"},
        "mappings": {
            "dynamic": "strict",
            "_meta": {"ragline_mapping_version": MAPPING_VERSION},
            "properties": {
                "chunk_id": _KEYWORD,
                "tenant_id": _KEYWORD,
                "document_id": _KEYWORD,
                "parent_id": _KEYWORD,
                "generation": {"type": "integer"},
                "revision": {"type": "long"},
                "ordinal": {"type": "integer"},
                "text": _ENGLISH,
                "contextual_header": _ENGLISH,
                "title": {**_ENGLISH, "fields": {"raw": {"type": "keyword", "ignore_above": 512}}},
                "section_path": {
                    **_ENGLISH,
                    "fields": {"raw": {"type": "keyword", "ignore_above": 512}},
                },
                "content_type": _KEYWORD,
                "language": _KEYWORD,
                "source_type": _KEYWORD,
                "uri": {"type": "keyword", "index": False},
                "acl_groups": _KEYWORD,
                "classification": _KEYWORD,
                "trust": _KEYWORD,
                "version": _KEYWORD,
                "series_id": _KEYWORD,
                "effective_date": {"type": "date"},
                "expiry_date": {"type": "date"},
                "superseded": {"type": "boolean"},
                "injection_suspect": {"type": "boolean"},
                "pii_types": _KEYWORD,
                "token_count": {"type": "integer"},
                "page_start": {"type": "integer"},
                "page_end": {"type": "integer"},
            },
        },
    }


async def ensure_index(client: AsyncOpenSearch, name: str) -> bool:
    """Create the index if it is missing; True when it was created."""
    with os_errors():
        if await client.indices.exists(index=name):
            return False
        resp = await client.indices.create(index=name, body=chunk_mapping(), ignore=400)
    if isinstance(resp, dict) and resp.get("status") == 400:
        err = resp.get("error")
        kind = err.get("type") if isinstance(err, dict) else None
        if kind != "resource_already_exists_exception":  # a concurrent creator won
            raise PermanentError(f"cannot create index: {kind}")
        return False
    return True


async def drop_index(client: AsyncOpenSearch, name: str) -> None:
    with os_errors():
        await client.indices.delete(index=name, ignore_unavailable=True)
