"""The query side of embedding spaces (docs/adr/0013-embedding-spaces.md).

Every search resolves its space once, before anything else: the live space, or, for an
admin only, the space named by the ``X-Ragline-Space`` header. That one ``Space`` gives
the query vector (the model's vector, truncated/normalized as the space says), the
dense leg's table and the answer-cache key, so a search never mixes spaces and a flip
never serves an answer cached under the old space. The header needs the separate admin
credential ``X-Ragline-Admin-Key`` (``RAGLINE_QUERY_SPACE_ADMIN_KEY``); an ordinary
caller who sends it gets 403, whatever its token says. Row-level security still applies
to the admin's own principal: the key selects a space, never more data.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from ragline.auth import Forbidden
from ragline.store.pg_errors import pg_errors
from ragline.store.space_model import Space
from ragline.store.spaces import SpaceNotFound, get_space, live_space

__all__ = [
    "ADMIN_KEY_HEADER",
    "SPACE_HEADER",
    "SpaceResolver",
    "requested_space",
    "vector_sql",
]

SPACE_HEADER = "x-ragline-space"
ADMIN_KEY_HEADER = "x-ragline-admin-key"


def requested_space(headers: Mapping[str, str], admin_key: str | None) -> str | None:
    """The space a request asks for (None: the live one). Raises ``Forbidden`` unless the
    request also carries the configured admin key (compared in constant time)."""
    name = headers.get(SPACE_HEADER)
    if name is None:
        return None
    given = headers.get(ADMIN_KEY_HEADER, "")
    if not admin_key or not given or not hmac.compare_digest(given.encode(), admin_key.encode()):
        raise Forbidden("selecting an embedding space needs the admin credential")
    return name.strip()


class SpaceResolver:
    """Reads the registry with the query pool (the query role may read it)."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    async def resolve(self, name: str | None) -> Space:
        # pg_errors: a closed pool or a lost server is BackendUnavailable (503), as for
        # every other read of the search
        with pg_errors():
            async with self.pool.connection() as conn:
                try:
                    space = await (live_space(conn) if name is None else get_space(conn, name))
                except SpaceNotFound:
                    raise Forbidden(f"no embedding space {name!r}") from None
                finally:
                    await conn.rollback()
        if space.state == "retired":
            raise Forbidden(f"embedding space {name!r} is retired")
        return space


def vector_sql(space: Space | None, alias: str = "c") -> sql.Composable:
    """The chunk's vector in ``space`` as an SQL expression over the chunk row ``alias``
    (primary: its ``embedding`` column; else its row in the space's partition)."""
    if space is None or space.is_primary:
        return sql.SQL("{}.embedding").format(sql.Identifier(alias))
    return sql.SQL(
        "(SELECT v.embedding::vector({dim}) FROM space_vectors v WHERE v.space_id = {sid}"
        " AND v.tenant_id = {a}.tenant_id AND v.chunk_id = {a}.chunk_id)"
    ).format(dim=sql.Literal(space.dim), sid=sql.Literal(space.space_id), a=sql.Identifier(alias))
