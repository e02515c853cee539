"""Bulk writes and deletes against a tenant index, with item-level error translation.

A bulk request can succeed as a whole while single items fail; those are classified
here too (429/5xx retriable, mapping errors permanent) so no failure goes unnoticed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from opensearchpy import AsyncOpenSearch

from ragline.errors import PermanentError, TransientError
from ragline.store.os_client import RETRIABLE_STATUS, os_errors

__all__ = [
    "IndexMissing",
    "Refresh",
    "bulk_index",
    "count_documents",
    "delete_documents",
    "delete_stale",
]

Refresh = Literal["true", "false", "wait_for"]
_MAX_CLAUSES = 256  # documents per delete_by_query request


class IndexMissing(TransientError):
    """The tenant alias is gone (the in-memory server restarted, or someone deleted it)."""


def _check_items(resp: dict[str, Any]) -> None:
    if not resp.get("errors"):
        return
    statuses: list[int] = []
    kinds: set[str] = set()
    for item in resp.get("items", ()):
        op = next(iter(item.values()))
        status = int(op.get("status", 500))
        if status >= 300 and not (status == 404 and "delete" in item):
            statuses.append(status)
            err = op.get("error")
            kinds.add(str(err.get("type")) if isinstance(err, dict) else "unknown")
    if not statuses:
        return
    summary = f"{len(statuses)} bulk items failed ({', '.join(sorted(kinds))})"
    if "index_not_found_exception" in kinds:
        raise IndexMissing(summary)
    if all(s in RETRIABLE_STATUS for s in statuses):
        raise TransientError(summary)
    raise PermanentError(summary)


async def bulk_index(
    client: AsyncOpenSearch,
    index: str,
    docs: Sequence[tuple[str, dict[str, Any]]],
    *,
    refresh: Refresh,
    batch_size: int = 500,
    require_alias: bool = True,
) -> int:
    """Index (create-or-replace) ``(id, source)`` pairs; returns how many were sent.

    ``require_alias``: never let OpenSearch auto-create a physical index with dynamic
    mappings under the alias name (``IndexMissing`` instead).
    """
    for start in range(0, len(docs), batch_size):
        part = docs[start : start + batch_size]
        body: list[dict[str, Any]] = []
        for doc_id, source in part:
            body.append({"index": {"_index": index, "_id": doc_id}})
            body.append(source)
        last = start + batch_size >= len(docs)
        with os_errors():
            resp = await client.bulk(
                body=body, refresh=refresh if last else "false", require_alias=require_alias
            )
        _check_items(resp)
    return len(docs)


def _bool_refresh(refresh: Refresh) -> bool:
    return refresh != "false"


async def delete_stale(
    client: AsyncOpenSearch,
    index: str,
    current: Sequence[tuple[str, int]],
    *,
    refresh: Refresh,
) -> int:
    """Delete each document's chunks written before ``revision`` (previous generations,
    chunks that no longer exist). ``current`` holds (document_id, revision) pairs."""
    deleted = 0
    for start in range(0, len(current), _MAX_CLAUSES):
        part = current[start : start + _MAX_CLAUSES]
        should = [
            {
                "bool": {
                    "filter": [
                        {"term": {"document_id": doc}},
                        {"range": {"revision": {"lt": rev}}},
                    ]
                }
            }
            for doc, rev in part
        ]
        query = {"query": {"bool": {"should": should, "minimum_should_match": 1}}}
        with os_errors():
            resp = await client.delete_by_query(
                index=index,
                body=query,
                refresh=_bool_refresh(refresh),
                conflicts="proceed",
                ignore_unavailable=True,
            )
        deleted += int(resp.get("deleted", 0))
    return deleted


async def delete_documents(
    client: AsyncOpenSearch, index: str, document_ids: Sequence[str], *, refresh: Refresh
) -> int:
    """Delete every chunk of the documents."""
    deleted = 0
    for start in range(0, len(document_ids), _MAX_CLAUSES):
        part = list(document_ids[start : start + _MAX_CLAUSES])
        with os_errors():
            resp = await client.delete_by_query(
                index=index,
                body={"query": {"terms": {"document_id": part}}},
                refresh=_bool_refresh(refresh),
                conflicts="proceed",
                ignore_unavailable=True,
            )
        deleted += int(resp.get("deleted", 0))
    return deleted


async def count_documents(
    client: AsyncOpenSearch, index: str, document_ids: Sequence[str]
) -> dict[str, tuple[int, int, int]]:
    """Per document: (chunk count, min revision, max revision) in the index."""
    if not document_ids:
        return {}
    body = {
        "size": 0,
        "query": {"terms": {"document_id": list(document_ids)}},
        "aggs": {
            "docs": {
                "terms": {"field": "document_id", "size": len(document_ids)},
                "aggs": {
                    "min_rev": {"min": {"field": "revision"}},
                    "max_rev": {"max": {"field": "revision"}},
                },
            }
        },
    }
    with os_errors():
        resp = await client.search(index=index, body=body, ignore_unavailable=True)
    out: dict[str, tuple[int, int, int]] = {}
    for b in resp.get("aggregations", {}).get("docs", {}).get("buckets", ()):
        out[str(b["key"])] = (
            int(b["doc_count"]),
            int(b["min_rev"]["value"] or 0),
            int(b["max_rev"]["value"] or 0),
        )
    return out
