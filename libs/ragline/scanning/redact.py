"""Apply decided spans to one text: placeholders for redactions, positions for everything.

Overlapping redaction spans are merged into their union (a secret partly inside a PII
span must not survive in pieces); the merged span takes the type of its highest-priority
member (secrets before PII, then the higher score, the longest, the first reported) and
counts as one finding of that type: two detectors reporting the same secret are one
secret. Tagged spans keep their text; their positions are shifted by the placeholders
before them, and a tag whose text was entirely redacted away no longer counts as kept PII.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Decision", "Redacted", "placeholder", "redact_text"]


def placeholder(type_: str) -> str:
    return f"[REDACTED:{type_}]"


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """A span with what to do with it. ``priority``: lower wins a merged span's type."""

    start: int
    end: int
    type: str
    label: str
    redact: bool
    priority: int = 1
    score: float = 1.0

    @property
    def rank(self) -> tuple[int, float, int]:
        """Lower wins: priority, then higher score, then longer span."""
        return (self.priority, -self.score, -(self.end - self.start))


@dataclass(kw_only=True, slots=True)
class Redacted:
    text: str
    redactions: int = 0
    positions: list[tuple[str, int, int]] = field(default_factory=list)
    kept_types: set[str] = field(default_factory=set)

    @property
    def labels(self) -> list[str]:
        """One label per placeholder and per kept (tagged) span: what the counts count."""
        return [label for label, _, _ in self.positions]


def _merge(spans: list[Decision]) -> list[tuple[int, int, Decision, list[Decision]]]:
    merged: list[tuple[int, int, Decision, list[Decision]]] = []
    for d in sorted(spans, key=lambda d: (d.start, -d.end)):
        if merged and d.start < merged[-1][1]:
            s, e, best, members = merged[-1]
            members.append(d)
            if d.rank < best.rank:
                best = d
            merged[-1] = (s, max(e, d.end), best, members)
        else:
            merged.append((d.start, d.end, d, [d]))
    return merged


def redact_text(text: str, decisions: list[Decision]) -> Redacted:
    reds = _merge([d for d in decisions if d.redact and d.end > d.start])
    parts: list[str] = []
    out = Redacted(text="")
    # (original end, cumulative shift after it) for mapping tag offsets
    shifts: list[tuple[int, int, int]] = []
    pos = 0
    shift = 0
    for s, e, best, _members in reds:
        parts.append(text[pos:s])
        ph = placeholder(best.type)
        new_start = s + shift
        parts.append(ph)
        out.positions.append((best.label, new_start, new_start + len(ph)))
        shift += len(ph) - (e - s)
        shifts.append((s, e, shift))
        pos = e
    parts.append(text[pos:])
    out.text = "".join(parts)
    out.redactions = len(reds)

    def mapped(offset: int) -> int:
        delta = 0
        for s, e, after in shifts:
            if offset >= e:
                delta = after
            elif offset > s:  # inside a redaction: snap to its placeholder end
                return e + after
            else:
                break
        return offset + delta

    seen: set[tuple[str, int, int]] = set()
    for d in sorted((d for d in decisions if not d.redact), key=lambda d: (d.start, -d.end)):
        covered = sum(max(0, min(d.end, e) - max(d.start, s)) for s, e, _, _ in reds)
        if covered >= d.end - d.start:
            continue
        tag_pos = (d.label, mapped(d.start), mapped(d.end))
        # one tagged entity reported by two recognizers (or nested in itself) counts once
        if tag_pos in seen or any(
            lbl == d.label and s <= tag_pos[1] and tag_pos[2] <= e for lbl, s, e in seen
        ):
            continue
        seen.add(tag_pos)
        out.kept_types.add(d.type)
        out.positions.append(tag_pos)
    return out
