"""The contract between a consumer service and the runtime that drives it.

A service is a ``Stage[In, Out]``: it names its input topics, declares the event types
it takes (``In``) and emits (``Out``) as its type arguments, opens its resources in
``open`` and turns one input event into zero or more ``Output``s in ``process`` (or a
whole micro-batch in ``process_batch``). The base class checks the contract once for
every stage: a stage used before ``start`` refuses (``NotBuiltError``) and an event of
another type is a ``ContractError``, so no stage repeats those checks. Everything a
stage may hand to the runtime is declared here: its outputs, an optional ASGI app served
next to the consumer (``http_app``) and, on a ``QuarantineError``, a cleaned ``meta`` and
``findings`` (``quarantined_event`` builds the ``doc.quarantined`` from them).

The runtime (``runtime.consumer``) does everything else: validation against the topic's
contract, retries with backoff for ``TransientError``, the dead-letter topic for
everything that keeps failing, quarantine events for ``QuarantineError``, publishing
outputs keyed by ``document_id`` with the trace context, committing the offset only after
the outputs are published, metrics and graceful shutdown.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, Union, get_args, get_origin

from ragline.config import Settings
from ragline.errors import ContractError, NotBuiltError, QuarantineError
from ragline.events import (
    DocQuarantined,
    DocumentMeta,
    EventBase,
    FindingsSummary,
    meta_sealed,
    seal_problem,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = [
    "BatchConfig",
    "Output",
    "Results",
    "Stage",
    "StageContext",
    "StageQuarantine",
    "quarantined_event",
]

In = TypeVar("In", bound=EventBase)
Out = TypeVar("Out", bound=EventBase, covariant=True)


@dataclass(frozen=True, kw_only=True)
class Output(Generic[Out]):
    topic: str
    event: Out


# per input: its outputs, or the exception that failed it (one bad document never fails
# its batch neighbours)
Results = Sequence[Sequence[Output[Out]] | BaseException]


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


def _event_types(arg: Any) -> tuple[type[EventBase], ...]:
    """``DocA | DocB`` -> ``(DocA, DocB)``; ``Never`` (emits nothing) -> ``()``."""
    if get_origin(arg) in (Union, types.UnionType):
        return tuple(t for a in get_args(arg) for t in _event_types(a))
    if isinstance(arg, type) and issubclass(arg, EventBase):
        return (arg,)
    return ()


class Stage(Generic[In, Out]):
    """Base class of every consumer service. Subclasses set the class attributes and
    implement ``process`` (one event) or ``process_batch`` (a micro-batch)."""

    name: ClassVar[str]
    input_topics: ClassVar[tuple[str, ...]]
    batch: ClassVar[BatchConfig | None] = None
    # the event types of ``In`` and ``Out``, read from the type arguments
    accepts: ClassVar[tuple[type[EventBase], ...]] = ()
    emits: ClassVar[tuple[type[EventBase], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if get_origin(base) is Stage:
                takes, gives = get_args(base)
                cls.accepts, cls.emits = _event_types(takes), _event_types(gives)

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._started = False

    @property
    def started(self) -> bool:
        return self._started

    async def start(self) -> None:
        """Called once by the runtime before the first message."""
        await self.open()
        self._started = True

    async def stop(self) -> None:
        """Called once by the runtime on shutdown."""
        self._started = False
        await self.close()

    async def open(self) -> None:
        """Open pools, load models."""

    async def close(self) -> None:
        """Close what ``open`` opened (also after a partial ``open``)."""

    def http_app(self) -> FastAPI | None:
        """An app the runtime serves next to the consumer (the connector's webhook)."""
        return None

    async def handle(self, event: object, ctx: StageContext) -> Sequence[Output[Out]]:
        """One event, checked like a batch of one; raises what failed it."""
        (result,) = await self.handle_batch([event], ctx)
        if isinstance(result, BaseException):
            raise result
        return result

    async def handle_batch(self, events: Sequence[object], ctx: StageContext) -> Results[Out]:
        """The runtime's entry: the contract checks, then ``process_batch`` on the events
        of the declared types; per input, its outputs or the exception that failed it."""
        if not self._started:
            refused = NotBuiltError(f"the {self.name} stage was used before start()")
            return [refused] * len(events)
        results: list[Sequence[Output[Out]] | BaseException] = []
        valid: list[tuple[int, In]] = []
        for i, ev in enumerate(events):
            if isinstance(ev, self.accepts):
                valid.append((i, ev))  # type: ignore[arg-type]  # In is one of accepts
                results.append(())
            else:
                results.append(
                    ContractError(
                        f"{self.name} takes {', '.join(self.input_topics)}, got {type(ev).__name__}"
                    )
                )
        if valid:
            done = await self.process_batch([ev for _, ev in valid], ctx)
            for (i, _), out in zip(valid, done, strict=True):
                results[i] = out if isinstance(out, BaseException) else _sealed(self.name, out)
        return results

    async def process_batch(self, events: Sequence[In], ctx: StageContext) -> Results[Out]:
        """Default: one ``process`` per event. Batch stages (the embedder) override it."""
        results: list[Sequence[Output[Out]] | BaseException] = []
        for ev in events:
            try:
                results.append(await self.process(ev, ctx))
            except Exception as exc:  # the runtime classifies it
                results.append(exc)
        return results

    async def process(self, event: In, ctx: StageContext) -> Sequence[Output[Out]]:
        """One event of a declared type. A stage implements this or ``process_batch``."""
        if type(self).process_batch is Stage.process_batch:
            raise NotImplementedError(f"{type(self).__name__} implements neither process")
        (result,) = await self.process_batch([event], ctx)
        if isinstance(result, BaseException):
            raise result
        return result


class StageQuarantine(QuarantineError):
    """A quarantine that hands the runtime a cleaned ``meta`` and ``findings`` (the
    scanner: redacted), which ``doc.quarantined`` carries instead of the input's."""

    def __init__(
        self,
        reason_code: str,
        reason: str,
        *,
        meta: DocumentMeta | None = None,
        findings: FindingsSummary | None = None,
    ) -> None:
        super().__init__(reason_code, reason)
        self.meta = meta
        self.findings = findings


def _sealed(stage: str, outputs: Sequence[Output[Out]]) -> Sequence[Output[Out]] | ContractError:
    """The stage's outputs, or why one of them may not be published: a post-scanner event
    whose text fields the scanner did not seal (``events.seal_problem``). The input is then
    dead-lettered, never passed on with text that went around the scanner."""
    for out in outputs:
        why = seal_problem(out.event)
        if why is not None:
            return ContractError(f"{stage} output refused: {why}")
    return outputs


def _quarantine_meta(meta: DocumentMeta | None) -> DocumentMeta | None:
    """A quarantine's meta: as sealed by the scanner, else without any text field (the
    input of a stage before the scanner, or a scan that did not finish, is raw text)."""
    if meta is None or meta_sealed(meta):
        return meta
    return meta.without_text()


def quarantined_event(event: EventBase, exc: QuarantineError, *, stage: str) -> DocQuarantined:
    """The ``doc.quarantined`` the runtime publishes for ``exc``: the envelope of the
    failed input, the reason, and the stage's cleaned ``meta``/``findings`` when it handed
    any (a ``StageQuarantine``) instead of the input's, which may hold what blocked it.
    A meta the scanner did not seal keeps no text field: ``doc.quarantined`` is a
    post-scanner topic, and the input of the connector, the parser or a failed scan
    carries raw titles, uris and metadata values (issue 31)."""
    meta = exc.meta if isinstance(exc, StageQuarantine) else None
    findings = exc.findings if isinstance(exc, StageQuarantine) else None
    return DocQuarantined(
        tenant_id=event.tenant_id,
        document_id=event.document_id,
        content_hash=event.content_hash,
        source_seq=event.source_seq,
        traceparent=event.traceparent,
        meta=_quarantine_meta(meta or getattr(event, "meta", None)),
        stage=stage,
        reason_code=exc.reason_code,
        reason=exc.reason[:1000],
        findings=findings or getattr(event, "findings", None),
        priority=event.priority,  # the input's lane (docs/lanes.md)
        seq_epoch=event.seq_epoch,
    )
