"""The scanner's value types: a finding (a typed span, never its text) and a detection plan.

Findings carry offsets only. The matched value stays inside the text it came from, so
nothing that holds a ``Finding`` (results crossing a process boundary, logs, metrics,
the findings summary) can leak it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["DetectPlan", "DetectResult", "Finding", "FindingKind"]


class FindingKind(StrEnum):
    SECRET = "secret"  # noqa: S105
    PII = "pii"


@dataclass(frozen=True, kw_only=True, slots=True, order=True)
class Finding:
    """A typed span ``[start, end)`` inside one text item. ``type`` is a slug or entity name."""

    item: int
    start: int
    end: int
    kind: FindingKind
    type: str
    score: float = 1.0
    detector: str = ""

    @property
    def label(self) -> str:
        """``secret:aws_access_key`` / ``pii:EMAIL_ADDRESS``: the key used in counts."""
        return f"{self.kind.value}:{self.type}"


@dataclass(frozen=True, kw_only=True, slots=True)
class DetectPlan:
    """What to look for in one batch of text items; derived from the effective policy.

    Secret detection always runs (no policy may switch it off). PII entity lists name only
    the entities whose action is not ``off``, so NER runs only when a policy needs it.
    """

    pii_patterns: tuple[str, ...] = ()
    ner_entities: tuple[str, ...] = ()
    min_score: float = 0.4

    @property
    def needs_ner(self) -> bool:
        return bool(self.ner_entities)


@dataclass(kw_only=True, slots=True)
class DetectResult:
    """Findings for a batch of items plus per-detector wall time (seconds) and bytes seen."""

    findings: list[Finding] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    n_bytes: int = 0
    timed_out: bool = False  # the deadline passed: findings are incomplete, never use them

    def merge(self, other: DetectResult, *, item_offset: int = 0) -> None:
        for f in other.findings:
            self.findings.append(
                Finding(
                    item=f.item + item_offset,
                    start=f.start,
                    end=f.end,
                    kind=f.kind,
                    type=f.type,
                    score=f.score,
                    detector=f.detector,
                )
            )
        for k, v in other.seconds.items():
            self.seconds[k] = self.seconds.get(k, 0.0) + v
        self.n_bytes += other.n_bytes
        self.timed_out = self.timed_out or other.timed_out
