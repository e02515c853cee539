"""Bulk writes and deletes against a tenant index, with item-level error handling.

A bulk request can succeed as a whole while single items fail; those are handled item
by item: a retriable item (429 throttling, 5xx) is sent again, alone with the other
retriable ones, with backoff; a permanently rejected item (a mapping rejection) is
reported back by id with its reason (``BulkResult.rejected``) so the caller can
quarantine its document while the neighbours in the same request are kept. No failure
goes unnoticed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from opensearchpy import AsyncOpenSearch

from ragline.errors import PermanentError, TransientError
from ragline.store.os_client import RETRIABLE_STATUS, os_errors

__all__ = [
    "BulkResult",
    "IndexMissing",
    "Refresh",
    "bulk_index",
    "count_documents",
    "delete_documents",
    "delete_stale",
    "older_revisions_possible",
]

Refresh = Literal["true", "false", "wait_for"]
_MAX_CLAUSES = 256  # documents per delete_by_query request


class IndexMissing(TransientError):
    """The tenant alias is gone (the in-memory server restarted, or someone deleted it)."""


@dataclass(frozen=True, kw_only=True)
class BulkResult:
    written: int = 0
    # id -> reason ("<status> <error type> [caused by <type>]", never a value) of each
    # item rejected for good
    rejected: dict[str, str] = field(default_factory=dict)


def item_failures(resp: dict[str, Any]) -> tuple[list[int], dict[int, str]]:
    """Positions of the items to send again (429/5xx) and of the items rejected for good
    (with their reason) in one ``_bulk`` response. A missing index raises
    ``IndexMissing`` (the whole request is to be sent again after recreating it)."""
    retry: list[int] = []
    rejected: dict[int, str] = {}
    if not resp.get("errors"):
        return retry, rejected
    for pos, item in enumerate(resp.get("items", ())):
        op = next(iter(item.values()))
        status = int(op.get("status", 500))
        if status < 300 or (status == 404 and "delete" in item):
            continue
        err = op.get("error")
        kind = str(err.get("type")) if isinstance(err, dict) else "unknown"
        if kind == "index_not_found_exception":
            raise IndexMissing("bulk items failed (index_not_found_exception)")
        if status in RETRIABLE_STATUS:
            retry.append(pos)
        else:  # OpenSearch's own reason can quote the value (document text): left out
            cause = err.get("caused_by") if isinstance(err, dict) else None
            why = f" caused by {cause.get('type')}" if isinstance(cause, dict) else ""
            rejected[pos] = f"{status} {kind}{why}"
    return retry, rejected


async def bulk_index(
    client: AsyncOpenSearch,
    index: str,
    docs: Sequence[tuple[str, dict[str, Any]]],
    *,
    refresh: Refresh,
    batch_size: int = 500,
    require_alias: bool = True,
    allow_rejects: bool = False,
    item_retries: int = 3,
    item_backoff_s: float = 0.5,
) -> BulkResult:
    """Index (create-or-replace) ``(id, source)`` pairs.

    Items that fail with a retriable status are sent again (up to ``item_retries`` times,
    backoff doubling from ``item_backoff_s``), then raise ``TransientError``. Items
    rejected for good are returned in ``BulkResult.rejected`` with ``allow_rejects``,
    else raise ``PermanentError``. ``require_alias``: never let OpenSearch auto-create a
    physical index with dynamic mappings under the alias name (``IndexMissing`` instead).
    """
    rejected: dict[str, str] = {}
    for start in range(0, len(docs), batch_size):
        part = list(docs[start : start + batch_size])
        last = start + batch_size >= len(docs)
        wait = item_backoff_s
        for attempt in range(item_retries + 1):
            body: list[dict[str, Any]] = []
            for doc_id, source in part:
                body.append({"index": {"_index": index, "_id": doc_id}})
                body.append(source)
            with os_errors():
                resp = await client.bulk(
                    body=body, refresh=refresh if last else "false", require_alias=require_alias
                )
            retry, bad = item_failures(resp)
            for pos, why in bad.items():
                rejected[part[pos][0]] = why
            if not retry:
                break
            if attempt == item_retries:
                raise TransientError(f"{len(retry)} bulk items still throttled or failing")
            part = [part[pos] for pos in retry]
            await asyncio.sleep(wait)
            wait *= 2.0
    if rejected and not allow_rejects:
        kinds = sorted(set(rejected.values()))
        raise PermanentError(f"{len(rejected)} bulk items failed ({', '.join(kinds)})")
    return BulkResult(written=len(docs) - len(rejected), rejected=rejected)


def _bool_refresh(refresh: Refresh) -> bool:
    return refresh != "false"


def older_revisions_possible(current: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (document_id, revision) pairs that can have chunks of an older revision."""
    return [(doc, rev) for doc, rev in current if rev > 1]


async def delete_stale(
    client: AsyncOpenSearch,
    index: str,
    current: Sequence[tuple[str, int]],
    *,
    refresh: Refresh,
) -> int:
    """Delete each document's chunks written before ``revision`` (previous generations,
    chunks that no longer exist). ``current`` holds (document_id, revision) pairs.

    A document at its first revision has nothing older (revisions start at 1): it costs
    no call. A backfill of new documents so makes no ``_delete_by_query`` at all, each of
    which is a search plus, with a refresh policy, a forced refresh of the index."""
    current = older_revisions_possible(current)
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
