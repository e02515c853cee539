"""The contract between a consumer service and the runtime that drives it.

A service is a ``Stage``: it names its input topics, opens its resources in ``start``,
and turns one validated input event into zero or more ``Output``s in ``handle``. The
runtime (``runtime.consumer``) does everything else: validation against the topic's
contract, retries with backoff for ``TransientError``, the dead-letter topic for
everything that keeps failing, quarantine events for ``QuarantineError``, publishing
outputs keyed by ``document_id`` with the trace context, committing the offset only after
the outputs are published, metrics and graceful shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragline.config import Settings
from ragline.events import EventBase

__all__ = ["BatchConfig", "Output", "Stage", "StageContext"]


@dataclass(frozen=True, kw_only=True)
class Output:
    topic: str
    event: EventBase


@dataclass(frozen=True, kw_only=True)
class BatchConfig:
    """Micro-batching across messages: up to ``max_records`` or ``linger_ms``."""

    max_records: int = 64
    linger_ms: int = 50


@dataclass(kw_only=True)
class StageContext:
    settings: Settings
    logger: logging.Logger
    attempt: int = 1
    headers: dict[str, str] = field(default_factory=dict)


class Stage:
    """Base class of every consumer service. Subclasses set the class attributes."""

    name: ClassVar[str]
    input_topics: ClassVar[tuple[str, ...]]
    batch: ClassVar[BatchConfig | None] = None

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def start(self) -> None:
        """Open pools, load models. Called once before the first message."""

    async def stop(self) -> None:
        """Close what ``start`` opened. Called once on shutdown."""

    async def handle(self, event: Any, ctx: StageContext) -> Sequence[Output]:
        """One event. A stage that only implements ``handle_batch`` gets a batch of one."""
        if type(self).handle_batch is Stage.handle_batch:
            raise NotImplementedError(f"{type(self).__name__} implements neither handle")
        (result,) = await self.handle_batch([event], ctx)
        if isinstance(result, BaseException):
            raise result
        return result

    async def handle_batch(
        self, events: Sequence[Any], ctx: StageContext
    ) -> Sequence[Sequence[Output] | BaseException]:
        """Default: one ``handle`` per event. Batch stages (the embedder) override this.

        Returns, per input, its outputs or the exception that failed it, so one bad
        document never fails its batch neighbours.
        """
        results: list[Sequence[Output] | BaseException] = []
        for ev in events:
            try:
                results.append(await self.handle(ev, ctx))
            except Exception as exc:  # the runtime classifies it
                results.append(exc)
        return results
