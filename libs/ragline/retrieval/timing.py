"""Per-stage wall-clock timings of one search, in milliseconds, mirrored to Prometheus."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from ragline.retrieval.metrics import STAGE_SECONDS
from ragline.tracing import span

__all__ = ["BACKEND_STAGES", "Timings"]

# stages that wait on a backend (Postgres, OpenSearch, a model): their sum is what the
# service's own overhead is measured against
BACKEND_STAGES = ("embed", "in_force", "retrieve", "rerank", "hydrate", "finalize")


class Timings:
    def __init__(self) -> None:
        self._start = time.perf_counter()
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            with span(f"query {name}", attributes={"ragline.query_stage": name}):
                yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def add(self, name: str, seconds: float) -> None:
        self.ms[name] = self.ms.get(name, 0.0) + seconds * 1000.0
        STAGE_SECONDS.labels(name).observe(seconds)

    def finish(self) -> dict[str, float]:
        total = (time.perf_counter() - self._start) * 1000.0
        out = {k: round(v, 3) for k, v in self.ms.items()}
        out["backend"] = round(sum(self.ms.get(s, 0.0) for s in BACKEND_STAGES), 3)
        out["total"] = round(total, 3)
        return out
