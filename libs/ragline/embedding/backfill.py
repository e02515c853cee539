"""Backfill of a shadow embedding space from the chunk texts already in Postgres (no
re-parse, no re-scan): throttled, resumable, with progress and an ETA.

Resumable by construction: each batch is committed as it is written, and a batch only
ever holds chunks that have no vector in the space yet, so a run killed at any point
and started again re-embeds nothing it had finished. Passes repeat from the start until
one finds nothing (chunks written behind the cursor by a document that arrived before
the space existed are caught by the next pass; later writes are dual-written by the
indexer, ``ragline.store.spaces.write_space_vectors``).

Vectors come, cheapest first, from the chunk's own vector (same model, same text: a
truncated space costs no model call), the embedding cache (model, revision, text), and
only then the model (its output is put in the cache, where the embedder's and the
indexer's dual write find it too).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from psycopg_pool import AsyncConnectionPool

from ragline.embedding.model import Embedder
from ragline.embedding.texts import text_key
from ragline.errors import ConfigError
from ragline.store.embedding_cache import get_cached, put_cached
from ragline.store.space_model import Space, recipe_text, transform
from ragline.store.spaces import (
    SPACE_VECTORS_WRITTEN,
    count_progress,
    missing_children,
    upsert_vectors,
)

__all__ = ["BackfillStats", "Throttle", "backfill_space"]


@dataclass
class BackfillStats:
    written: int = 0  # vectors written by this run
    derived: int = 0  # from the chunk's own vector (no model call)
    cached: int = 0  # from the embedding cache
    computed: int = 0  # by the model
    passes: int = 0
    done: int = 0  # child chunks with a vector in the space (at the last check)
    total: int = 0
    elapsed_s: float = 0.0
    model_s: float = 0.0
    history: list[tuple[float, int]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.written / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        left = max(self.total - self.done, 0)
        if left == 0:
            return 0.0
        return left / self.rate if self.rate > 0 else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "written": self.written,
            "derived": self.derived,
            "cached": self.cached,
            "computed": self.computed,
            "passes": self.passes,
            "done": self.done,
            "total": self.total,
            "elapsed_s": round(self.elapsed_s, 3),
            "model_s": round(self.model_s, 3),
            "chunks_per_s": round(self.rate, 2),
            "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
        }


class Throttle:
    """At most ``rate`` chunks per second on average (None: unthrottled)."""

    def __init__(self, rate: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate is not None and rate <= 0:
            raise ConfigError("--max-rate must be > 0")
        self.rate = rate
        self._clock = clock
        self._t0 = clock()
        self._n = 0

    def delay(self, n: int) -> float:
        """Seconds to wait after ``n`` more chunks so the average stays at the rate."""
        self._n += n
        if self.rate is None:
            return 0.0
        due = self._t0 + self._n / self.rate
        return max(0.0, due - self._clock())


async def backfill_space(
    pool: AsyncConnectionPool,
    space: Space,
    embedder: Embedder,
    *,
    batch_size: int = 64,
    max_rate: float | None = None,
    on_progress: Callable[[BackfillStats], None] | None = None,
    progress_every_s: float = 5.0,
) -> BackfillStats:
    """Fill ``space`` until a pass finds no child chunk without a vector."""
    if space.is_primary:
        raise ConfigError("the primary space is filled by the pipeline, not by backfill")
    if space.state == "retired":
        raise ConfigError(f"space {space.name!r} is retired")
    model, revision = space.model_key(embedder.name, embedder.revision)
    if (model, revision) != (embedder.name, embedder.revision):
        raise ConfigError(
            f"space {space.name!r} needs model {model}@{revision}; the loaded model is "
            f"{embedder.name}@{embedder.revision}"
        )
    stats = BackfillStats()
    throttle = Throttle(max_rate)
    t0 = time.monotonic()
    last_report = 0.0
    async with pool.connection() as conn:
        stats.done, stats.total = await count_progress(conn, space)
        await conn.commit()
    while True:
        stats.passes += 1
        after: tuple[str, str] | None = None
        found_in_pass = 0
        while True:
            async with pool.connection() as conn:
                rows = await missing_children(conn, space, after=after, limit=batch_size)
                await conn.commit()
            if not rows:
                break
            found_in_pass += len(rows)
            after = (rows[-1].tenant_id, rows[-1].chunk_id)
            texts = {
                (r.tenant_id, r.chunk_id): recipe_text(space.recipe, r.contextual_header, r.text)
                for r in rows
            }
            keys = {k: text_key(t) for k, t in texts.items()}
            full: dict[str, NDArray[np.float32]] = {}
            for r in rows:
                own = (r.embedding_model, r.embedding_revision) == (model, revision)
                if space.recipe == "header" and own and r.embedding is not None:
                    full.setdefault(keys[(r.tenant_id, r.chunk_id)], r.embedding)
            stats.derived += len(full)
            lookup = sorted({h for h in keys.values() if h not in full})
            async with pool.connection() as conn:
                hits = await get_cached(conn, model=model, revision=revision, text_hashes=lookup)
                await conn.commit()
            stats.cached += len(hits)
            full.update(hits)
            todo = sorted({h for h in keys.values() if h not in full})
            if todo:
                by_hash = {keys[k]: t for k, t in texts.items()}
                t_model = time.monotonic()
                vecs = await asyncio.to_thread(embedder.encode, [by_hash[h] for h in todo])
                stats.model_s += time.monotonic() - t_model
                computed = dict(zip(todo, np.asarray(vecs, dtype=np.float32), strict=True))
                stats.computed += len(computed)
                full.update(computed)
                async with pool.connection() as conn, conn.transaction():
                    await put_cached(conn, model=model, revision=revision, vectors=computed)
            order = sorted(keys)
            vectors = transform(
                [full[keys[k]] for k in order], space.truncate_dim, normalize=space.normalize
            )
            items = [(t, c, keys[(t, c)], v) for (t, c), v in zip(order, vectors, strict=True)]
            async with pool.connection() as conn, conn.transaction():
                await upsert_vectors(conn, space, items, overwrite=False)
            stats.written += len(items)
            stats.done += len(items)
            SPACE_VECTORS_WRITTEN.labels(space.name, "backfill").inc(len(items))
            stats.elapsed_s = time.monotonic() - t0
            if on_progress is not None and stats.elapsed_s - last_report >= progress_every_s:
                last_report = stats.elapsed_s
                stats.history.append((stats.elapsed_s, stats.done))
                on_progress(stats)
            wait = throttle.delay(len(items))
            if wait > 0:
                await asyncio.sleep(wait)
        if found_in_pass == 0:
            break
    async with pool.connection() as conn:
        stats.done, stats.total = await count_progress(conn, space)
        await conn.commit()
    stats.elapsed_s = time.monotonic() - t0
    if on_progress is not None:
        on_progress(stats)
    return stats
