"""Helpers for the indexer integration tests (a uniquely named module, imported directly)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from opensearchpy import AsyncOpenSearch

from ragline.events import DocIndexed
from ragline.runtime.stage import Output
from ragline.store.os_index import index_name
from ragline.store.rls import scoped_transaction


def indexed(result: Sequence[Output] | BaseException) -> DocIndexed:
    """The doc.indexed of one successful result (fails the test otherwise)."""
    if isinstance(result, BaseException):
        raise result
    (out,) = result
    assert out.topic == "doc.indexed"
    assert isinstance(out.event, DocIndexed)
    return out.event


async def pg_chunk_texts(
    conn: psycopg.AsyncConnection[Any], tenant: str, document_id: str
) -> list[str]:
    cur = await conn.execute(
        "SELECT text FROM chunks WHERE tenant_id = %s AND document_id = %s ORDER BY ordinal",
        (tenant, document_id),
    )
    return [r[0] for r in await cur.fetchall()]


async def os_hits(
    client: AsyncOpenSearch,
    prefix: str,
    tenant: str,
    query: dict[str, Any],
    *,
    groups: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Sources of the hits of ``query`` in the tenant index (optionally ACL-filtered)."""
    q: dict[str, Any] = {"bool": {"must": [query]}}
    if groups is not None:
        q["bool"]["filter"] = [{"terms": {"acl_groups": list(groups)}}]
    resp = await client.search(
        index=index_name(prefix, tenant), body={"size": 1000, "query": q}, ignore_unavailable=True
    )
    return [h["_source"] for h in resp["hits"]["hits"]]


async def visible_chunks(
    conn: psycopg.AsyncConnection[Any], tenant: str, groups: Sequence[str], sql_text: str
) -> list[tuple[Any, ...]]:
    """Rows of ``sql_text`` as the query role scoped to (tenant, groups)."""
    async with scoped_transaction(conn, tenant_id=tenant, groups=groups):
        cur = await conn.execute(sql_text)  # type: ignore[arg-type]
        return await cur.fetchall()
