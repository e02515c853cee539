"""The embedding cache: one vector per (model, revision, sha256 of the embedded text).

A re-ingested or re-chunked document re-embeds only the chunks whose embedded text
changed; a model change (another revision) misses the cache by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from psycopg import AsyncConnection

from ragline.store.pg_errors import pg_errors

__all__ = ["get_cached", "put_cached"]


async def get_cached(
    conn: AsyncConnection, *, model: str, revision: str, text_hashes: Sequence[str]
) -> dict[str, NDArray[np.float32]]:
    """The cached vectors among ``text_hashes`` (missing hashes are absent)."""
    if not text_hashes:
        return {}
    with pg_errors():
        cur = await conn.execute(
            "SELECT text_hash, embedding FROM embedding_cache"
            " WHERE model = %s AND revision = %s AND text_hash = ANY(%s)",
            (model, revision, list(set(text_hashes))),
        )
        rows = await cur.fetchall()
    return {str(h): _array(v) for h, v in rows}


def _array(value: object) -> NDArray[np.float32]:
    # pgvector hands back numpy for vector(n) columns and a Vector for plain `vector`
    to_numpy = getattr(value, "to_numpy", None)
    raw = to_numpy() if callable(to_numpy) else value
    return np.asarray(raw, dtype=np.float32)


async def put_cached(
    conn: AsyncConnection,
    *,
    model: str,
    revision: str,
    vectors: Mapping[str, NDArray[np.float32]],
) -> None:
    """Store vectors by text hash; an existing entry wins (same key, same vector)."""
    if not vectors:
        return
    params = [(model, revision, h, int(v.shape[0]), v) for h, v in sorted(vectors.items())]
    with pg_errors():
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO embedding_cache (model, revision, text_hash, dim, embedding)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                params,
            )
