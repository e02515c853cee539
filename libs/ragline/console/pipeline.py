"""The pipeline page: backlog per stage and lane (read from the broker, so it answers for
stages that are down), the engines' health, and the local services' health."""

from __future__ import annotations

import asyncio
from typing import Any

from psycopg_pool import AsyncConnectionPool

from ragline.config import Settings
from ragline.errors import RaglineError
from ragline.events import lane_of_topic
from ragline.platform import supervisor
from ragline.retrieval.lexical import LexicalSearcher
from ragline.runtime.lag import stage_lag

__all__ = ["pipeline_state"]


async def _check(coro: Any, timeout_s: float) -> str:
    try:
        ok = await asyncio.wait_for(coro, timeout_s)
    except (RaglineError, OSError, TimeoutError) as exc:
        return f"down ({type(exc).__name__})"
    return "ok" if ok is not False else "down"


async def _pg(pool: AsyncConnectionPool) -> bool:
    async with pool.connection() as conn:
        await conn.execute("SELECT 1")
    return True


async def _throughput(pool: AsyncConnectionPool) -> dict[str, int]:
    """Events the indexer applied in the last 5 and 60 minutes (its ledger)."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FILTER (WHERE processed_at > now() - interval '5 minutes'),"
            " count(*) FROM processed_events WHERE processed_at > now() - interval '60 minutes'"
        )
        row = await cur.fetchone()
    return {"last_5_min": int(row[0]) if row else 0, "last_60_min": int(row[1]) if row else 0}


async def pipeline_state(
    settings: Settings,
    admin: AsyncConnectionPool,
    lexical: LexicalSearcher | None,
    *,
    timeout_s: float = 5.0,
) -> dict[str, Any]:
    lag_rows: list[dict[str, Any]] = []
    kafka = "ok"
    try:
        lags = await asyncio.wait_for(stage_lag(settings), timeout_s * 2)
    except (RaglineError, OSError, TimeoutError) as exc:
        lags = []
        kafka = f"down ({type(exc).__name__})"
    for s in lags:
        for topic, n in s.per_topic.items():
            base, lane = lane_of_topic(topic)
            lag_rows.append({"stage": s.stage, "topic": base, "lane": lane, "lag": n})
    engines = {
        "postgres": await _check(_pg(admin), timeout_s),
        "opensearch": await _check(lexical.ping(), timeout_s) if lexical else "not configured",
        "kafka": kafka,
    }
    services = [
        {
            "name": st.name,
            "pid": st.pid,
            "alive": st.alive,
            "healthy": st.healthy,
            "address": st.address,
        }
        for st in await asyncio.to_thread(supervisor.status, settings)
    ]
    try:
        throughput: dict[str, int] | str = await asyncio.wait_for(_throughput(admin), timeout_s)
    except (RaglineError, OSError, TimeoutError) as exc:
        throughput = f"unknown ({type(exc).__name__})"
    return {
        "throughput": throughput,
        "lag": lag_rows,
        "total_lag": sum(r["lag"] for r in lag_rows),
        "engines": engines,
        "services": services,
    }
