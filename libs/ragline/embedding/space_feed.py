"""The embedder's half of the dual write: while a non-primary space of this embedder's
model embeds another text than the event path (another recipe), the model's vectors of
that text go into the embedding cache before ``doc.embedded`` is published, and the
indexer writes them to the space in the same transaction as the chunks
(``ragline.store.spaces.write_space_vectors``). A space that embeds the same text (a
truncated space) needs nothing here: the indexer derives it from the event's vector.

Best effort by design: a failure here never fails a document (the event path is the
primary space's); the indexer counts what it could not find
(``ragline_space_vectors_missing_total``), ``ragline embeddings backfill`` fills it and
``promote`` refuses an incomplete space. The list of spaces is re-read every
``refresh_s`` seconds, so a space created meanwhile is fed from then on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import numpy as np
from prometheus_client import Counter
from psycopg_pool import AsyncConnectionPool

from ragline.embedding.model import Embedder
from ragline.embedding.texts import text_key
from ragline.errors import RaglineError
from ragline.events import ChunkLevel, DocEnriched
from ragline.store.embedding_cache import get_cached, put_cached
from ragline.store.space_model import Space, recipe_text
from ragline.store.spaces import list_spaces

__all__ = ["FEED_ERRORS", "SpaceFeeder"]

_log = logging.getLogger(__name__)

FEED_ERRORS = Counter(
    "ragline_space_feed_errors_total",
    "Batches whose shadow-space vectors the embedder could not prepare (backfill fills them)",
)


class SpaceFeeder:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        embedder: Embedder,
        *,
        batch_size: int = 64,
        refresh_s: float = 5.0,
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.batch_size = batch_size
        self.refresh_s = refresh_s
        self._spaces: list[Space] = []
        self._read_at = float("-inf")
        self.computed = 0

    async def spaces(self) -> list[Space]:
        """Active non-primary spaces of this model that embed another text."""
        if time.monotonic() - self._read_at >= self.refresh_s:
            async with self.pool.connection() as conn:
                found = await list_spaces(conn, include_retired=False)
                await conn.commit()
            name, rev = self.embedder.name, self.embedder.revision
            self._spaces = [
                s
                for s in found
                if not s.is_primary and s.same_model(name, rev) and s.recipe != "header"
            ]
            self._read_at = time.monotonic()
        return self._spaces

    async def feed(self, events: Sequence[DocEnriched]) -> int:
        """Put the vectors the spaces need into the cache; returns how many were computed."""
        try:
            return await self._feed(events)
        except RaglineError as exc:
            FEED_ERRORS.inc()
            _log.warning("space feed failed", extra={"fields": {"error": str(exc)}})
            return 0

    async def _feed(self, events: Sequence[DocEnriched]) -> int:
        spaces = await self.spaces()
        if not spaces:
            return 0
        texts: dict[str, str] = {}
        for space in spaces:
            for ev in events:
                for c in ev.chunks:
                    if c.level is ChunkLevel.CHILD:
                        header = c.enrichment.contextual_header if c.enrichment else None
                        t = recipe_text(space.recipe, header, c.text)
                        texts.setdefault(text_key(t), t)
        name, rev = self.embedder.name, self.embedder.revision
        async with self.pool.connection() as conn:
            have = await get_cached(conn, model=name, revision=rev, text_hashes=sorted(texts))
            await conn.commit()
        missing = sorted(h for h in texts if h not in have)
        for start in range(0, len(missing), self.batch_size):
            keys = missing[start : start + self.batch_size]
            vecs = await asyncio.to_thread(self.embedder.encode, [texts[k] for k in keys])
            computed = dict(zip(keys, np.asarray(vecs, dtype=np.float32), strict=True))
            async with self.pool.connection() as conn, conn.transaction():
                await put_cached(conn, model=name, revision=rev, vectors=computed)
        self.computed += len(missing)
        return len(missing)
