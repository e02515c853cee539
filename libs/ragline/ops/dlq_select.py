"""Which dead letters an operator's filters select, and what that means for the
offsets of the dlq tool's consumer group.

A consumer group can only commit a position, not a set: committing past a record that
the filters did NOT select would lose it. So a record that is kept but lies before the
last handled record of its partition is *requeued* (appended again to the same .dlq
topic) before the commit moves past it; kept records after the last handled one need
nothing. After a run, the pending records of the group are exactly the kept ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

__all__ = [
    "UNREADABLE",
    "DeadLetterFacts",
    "PartitionPlan",
    "Selector",
    "parse_age",
    "plan_partition",
]

# error class / stage shown for a .dlq record that is not a DeadLetter
UNREADABLE = "<unreadable>"

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> timedelta:
    """``90s``, ``30m``, ``12h``, ``7d``, ``2w`` -> timedelta."""
    m = _AGE.match(text.lower())
    if m is None:
        raise ValueError(f"not an age: {text!r} (use e.g. 30m, 12h, 7d)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


class DeadLetterFacts(Protocol):
    """What filters look at: never the payload."""

    @property
    def error_class(self) -> str: ...
    @property
    def stage(self) -> str: ...
    @property
    def tenant_id(self) -> str | None: ...
    @property
    def failed_at(self) -> datetime: ...
    @property
    def document_id(self) -> str | None: ...


@dataclass(frozen=True, kw_only=True)
class Selector:
    """Empty sets select everything; given sets must each contain the record's value."""

    error_classes: frozenset[str] = field(default_factory=frozenset)
    stages: frozenset[str] = field(default_factory=frozenset)
    tenants: frozenset[str] = field(default_factory=frozenset)
    older_than: timedelta | None = None
    documents: frozenset[str] = field(default_factory=frozenset)

    @property
    def selects_all(self) -> bool:
        return not (
            self.error_classes or self.stages or self.tenants or self.older_than or self.documents
        )

    def matches(self, rec: DeadLetterFacts, now: datetime) -> bool:
        if self.error_classes and rec.error_class not in self.error_classes:
            return False
        if self.stages and rec.stage not in self.stages:
            return False
        if self.tenants and rec.tenant_id not in self.tenants:
            return False
        if self.documents and rec.document_id not in self.documents:
            return False
        return self.older_than is None or rec.failed_at <= now - self.older_than


@dataclass(frozen=True, kw_only=True)
class PartitionPlan:
    handle: frozenset[int]
    requeue: frozenset[int]
    commit_to: int | None  # the new committed offset (next to read), None: no commit

    @property
    def last(self) -> int | None:
        """The last offset the run must visit (the commit covers everything up to it)."""
        return None if self.commit_to is None else self.commit_to - 1


def plan_partition(
    decisions: Sequence[tuple[int, bool]], *, budget: int | None = None
) -> tuple[PartitionPlan, int]:
    """``decisions``: (offset, handle?) in offset order. ``budget``: how many more records
    may be handled (``--limit``); the rest stay pending. Returns the plan and the records
    it handles."""
    handle: list[int] = []
    for offset, wanted in decisions:
        if wanted and (budget is None or len(handle) < budget):
            handle.append(offset)
    if not handle:
        return PartitionPlan(handle=frozenset(), requeue=frozenset(), commit_to=None), 0
    last = handle[-1]
    chosen = frozenset(handle)
    requeue = frozenset(o for o, _ in decisions if o < last and o not in chosen)
    return PartitionPlan(handle=chosen, requeue=requeue, commit_to=last + 1), len(handle)
