"""The async Postgres connection pool of the pipeline (admin DSN), with pgvector types.

Opened explicitly (``open=False`` + ``await pool.open()``) in a stage's ``start`` and
closed in ``stop``; nothing connects at import time.
"""

from __future__ import annotations

from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from ragline.store.pg_errors import pg_errors
from ragline.tracing import pg_cursor_factory

__all__ = ["open_pool"]


async def _configure(conn: AsyncConnection) -> None:
    await register_vector_async(conn)
    await conn.set_autocommit(False)


async def open_pool(
    dsn: str,
    *,
    name: str,
    min_size: int = 1,
    max_size: int = 4,
    timeout_s: float = 30.0,
) -> AsyncConnectionPool:
    """An open pool whose connections know the ``vector`` type.

    Raises ``BackendUnavailable`` when Postgres cannot be reached within ``timeout_s``.
    """
    kwargs: dict[str, object] = {"application_name": f"ragline-{name}"}
    if (cursor := pg_cursor_factory()) is not None:  # a span per statement (tracing on)
        kwargs["cursor_factory"] = cursor
    pool = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        name=name,
        open=False,
        timeout=timeout_s,
        configure=_configure,
        kwargs=kwargs,
    )
    try:
        with pg_errors():
            await pool.open(wait=True, timeout=timeout_s)
    except BaseException:
        await pool.close()  # its workers would keep reconnecting in the background
        raise
    return pool
