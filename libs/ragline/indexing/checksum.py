"""Checksums of both stores, to prove that a replay changed nothing.

Postgres: every column of every ``documents``, ``chunks`` and ``document_status`` row of
a tenant (timestamps included: a replay must not even touch a row). OpenSearch: every
stored source of the tenant's index, by id. Used by the replay tests and ``ragline
verify``-style checks; cost is linear in the tenant's size.
"""

from __future__ import annotations

import hashlib
import json

from opensearchpy import AsyncOpenSearch
from psycopg import AsyncConnection, sql

from ragline.store.os_client import os_errors
from ragline.store.pg_errors import pg_errors

__all__ = ["os_checksum", "pg_checksum"]

_TABLES = (
    ("documents", ("tenant_id", "document_id")),
    ("chunks", ("tenant_id", "chunk_id")),
    ("document_status", ("tenant_id", "document_id")),
)


async def pg_checksum(conn: AsyncConnection, tenant_id: str) -> str:
    h = hashlib.sha256()
    for table, key in _TABLES:
        query = sql.SQL(
            "SELECT count(*), coalesce(encode(sha256(convert_to("
            "string_agg(t::text, E'\\n' ORDER BY {order}), 'UTF8')), 'hex'), '')"
            " FROM {table} t WHERE tenant_id = %s"
        ).format(
            table=sql.Identifier(table),
            order=sql.SQL(", ").join(sql.Identifier(k) for k in key),
        )
        with pg_errors():
            cur = await conn.execute(query, (tenant_id,))
            row = await cur.fetchone()
        assert row is not None
        h.update(f"{table}:{row[0]}:{row[1]}\n".encode())
    return h.hexdigest()


async def os_checksum(client: AsyncOpenSearch, index: str, *, page: int = 500) -> str:
    h = hashlib.sha256()
    after: list[str] | None = None
    count = 0
    while True:
        body: dict[str, object] = {
            "size": page,
            "sort": [{"chunk_id": "asc"}],
            "query": {"match_all": {}},
        }
        if after is not None:
            body["search_after"] = after
        with os_errors():
            resp = await client.search(index=index, body=body, ignore_unavailable=True)
        hits = resp.get("hits", {}).get("hits", [])
        for hit in hits:
            h.update(hit["_id"].encode())
            h.update(json.dumps(hit["_source"], sort_keys=True).encode())
            count += 1
        if len(hits) < page:
            break
        after = hits[-1]["sort"]
    h.update(f"count:{count}".encode())
    return h.hexdigest()
