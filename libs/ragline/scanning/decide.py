"""From findings to decisions: the policy's action per finding, blocking, and propagation.

Propagation makes redaction consistent across a document: once a value is redacted
anywhere (a password in a table cell, an email in the body), every other occurrence of
the same string in any field (the rendered table in the block text, the title, a
metadata value) is redacted too, even where its context alone would not have been
enough for a detector.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ragline.scanning.model import Finding, FindingKind
from ragline.scanning.policy import EffectivePolicy
from ragline.scanning.redact import Decision

__all__ = ["Decided", "decide"]


@dataclass(kw_only=True, slots=True)
class Decided:
    per_item: list[list[Decision]]
    blocked: list[Finding] = field(default_factory=list)
    actions: dict[str, str] = field(default_factory=dict)  # label -> action, for metrics


def _action(f: Finding, policy: EffectivePolicy) -> str:
    if f.kind is FindingKind.SECRET:
        return policy.secret_action(f.type)
    return policy.pii_action(f.type)


def decide(
    items: Sequence[str],
    findings: Sequence[Finding],
    policy: EffectivePolicy,
    *,
    propagate_min_chars: int = 6,
) -> Decided:
    out = Decided(per_item=[[] for _ in items])
    values: dict[str, Decision] = {}
    for f in findings:
        action = _action(f, policy)
        if action == "off":
            continue
        out.actions[f.label] = action
        if action == "block":
            # also redacted (and propagated): the quarantine event carries the redacted meta
            out.blocked.append(f)
        redact = action in ("redact", "block")
        d = Decision(
            start=f.start,
            end=f.end,
            type=f.type,
            label=f.label,
            redact=redact,
            priority=0 if f.kind is FindingKind.SECRET else 1,
            score=f.score,
        )
        out.per_item[f.item].append(d)
        value = items[f.item][f.start : f.end]
        if redact and len(value.strip()) >= propagate_min_chars:
            prev = values.get(value)
            if prev is None or d.rank < prev.rank:
                values[value] = d
    if values:
        _propagate(items, values, out)
    return out


def _propagate(items: Sequence[str], values: dict[str, Decision], out: Decided) -> None:
    # whole tokens only: a redacted ``PASSWORD`` must not eat the middle of ``PGPASSWORD``
    alternation = re.compile(
        r"(?<![A-Za-z0-9_])(?:"
        + "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True))
        + r")(?![A-Za-z0-9_])"
    )
    for i, text in enumerate(items):
        have = {(d.start, d.end) for d in out.per_item[i] if d.redact}
        for m in alternation.finditer(text):
            if (m.start(), m.end()) in have:
                continue
            src = values[m.group(0)]
            out.per_item[i].append(
                Decision(
                    start=m.start(),
                    end=m.end(),
                    type=src.type,
                    label=src.label,
                    redact=True,
                    priority=src.priority,
                    score=src.score,
                )
            )
