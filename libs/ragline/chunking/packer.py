"""Greedy, structure-preferring packing of one segment's text into token-bounded children.

Each child is a slice of the segment text (``start:end``) whose first part
(``start:content_start``) repeats the tail of the previous child (overlap), optionally
preceded by a ``lead`` that is not in the text (a transcript speaker, a code signature).
Every child is verified with an exact token count, so the budget is never exceeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragline.chunking.boundaries import Cuts, Strength
from ragline.text.tokenizer import TokenCounter, TokenOffsets

__all__ = ["OverlapPolicy", "PackSpec", "Packer", "Span"]


@dataclass(frozen=True, kw_only=True)
class Span:
    start: int
    content_start: int
    end: int
    lead: str
    text: str
    tokens: int

    @property
    def overlap_chars(self) -> int:
        """Characters of ``text`` that repeat earlier text (lead + overlap)."""
        return len(self.lead) + self.content_start - self.start


@dataclass(frozen=True, kw_only=True)
class OverlapPolicy:
    min_strength: int  # cuts at least this strong may start an overlap
    min_tokens: int  # a structure-aligned overlap shorter than this is not preferred
    max_tokens: int
    word_target: int | None  # fallback: word-aligned overlap up to this; None = no fallback


@dataclass(frozen=True, kw_only=True)
class PackSpec:
    budget: int
    max_chars: int
    overlap: OverlapPolicy | None = None
    min_cut_strength: int = Strength.WORD  # weaker cuts only when nothing else fits
    fill: float = 0.5  # a stronger cut wins if the child is at least this full
    lead_for: Callable[[int], str] | None = None
    keep_indent: bool = False  # code: a child starts at its line start, indentation kept


def _safe(text: str, pos: int) -> bool:
    """No word piece straddles ``pos``: the pre-tokenizer splits at whitespace (and a CJK
    sentence mark is a piece of its own), so counts there add up exactly."""
    if pos <= 0 or pos >= len(text):
        return True
    return text[pos - 1].isspace() or text[pos].isspace() or text[pos - 1] in "。！？"


def _skip_ws(text: str, pos: int, keep_indent: bool = False) -> int:
    n = len(text)
    line_start = -1
    while pos < n and text[pos].isspace():
        pos += 1
        if text[pos - 1] == "\n":
            line_start = pos
    return line_start if keep_indent and line_start >= 0 else pos


class Packer:
    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._leads: dict[str, int] = {}

    def _lead_tokens(self, lead: str) -> int:
        if lead not in self._leads:
            if len(self._leads) > 1024:
                self._leads.clear()
            self._leads[lead] = self._counter.count(lead)
        return self._leads[lead]

    def pack(self, text: str, cuts: Cuts, spec: PackSpec) -> list[Span]:
        offs = self._counter.offsets(text)
        n = len(text.rstrip())
        spans: list[Span] = []
        s = _skip_ws(text, 0)
        while s < n:
            ov = s
            if spans and spec.overlap is not None:
                ov = self._overlap(text, cuts, offs, spec.overlap, spans[-1], s)
            span = self._fit(text, cuts, offs, spec, ov, s, n)
            if span is None and ov != s:
                span = self._fit(text, cuts, offs, spec, s, s, n)
            if span is None:  # a lead alone fills the budget: emit the text without it
                span = self._fit(text, cuts, offs, _no_lead(spec), s, s, n)
            assert span is not None and span.end > s
            spans.append(span)
            s = _skip_ws(text, span.end, spec.keep_indent)
        return spans

    # ------------------------------------------------------------------ one child

    def _fit(
        self,
        text: str,
        cuts: Cuts,
        offs: TokenOffsets,
        spec: PackSpec,
        ov: int,
        s: int,
        n: int,
    ) -> Span | None:
        lead = spec.lead_for(ov) if spec.lead_for is not None else ""
        avail = spec.budget - self._lead_tokens(lead)
        char_avail = spec.max_chars - len(lead)
        if avail <= offs.count(ov, s) or char_avail <= s - ov:
            return None

        def fits(pos: int) -> bool:
            return offs.count(ov, pos) <= avail and pos - ov <= char_avail

        i0 = cuts.index_after(s)
        lo, hi = i0, len(cuts.positions)  # largest i in [i0, hi) with fits(): bisect
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(cuts.positions[mid]):
                lo = mid + 1
            else:
                hi = mid
        i_max = lo - 1
        if i_max >= i0:
            e = cuts.positions[self._choose(cuts, offs, spec, s, i0, i_max)]
        else:
            e = self._hard_cut(offs, ov, s, avail, char_avail, n)
        e = min(e, n)
        lead_tokens = spec.budget - avail
        while True:
            end = ov + len(text[ov:e].rstrip())
            body = lead + text[ov:end]
            if _safe(text, ov) and _safe(text, end):  # additive: count from the offsets
                tokens = lead_tokens + offs.count(ov, end)
            else:  # a cut inside a word re-tokenizes differently: count it for real
                tokens = self._counter.count(body)
            if tokens <= spec.budget and len(body) <= spec.max_chars:
                return Span(start=ov, content_start=s, end=end, lead=lead, text=body, tokens=tokens)
            if end - s <= 1:
                return None  # overlap/lead leave no room: the caller retries without them
            e = self._shrink(cuts, offs, s, end)

    @staticmethod
    def _choose(cuts: Cuts, offs: TokenOffsets, spec: PackSpec, s: int, i0: int, i_max: int) -> int:
        if cuts.strengths[i_max] == Strength.END:
            return i_max
        if spec.min_cut_strength > Strength.WORD:
            for i in range(i_max, i0 - 1, -1):
                if cuts.strengths[i] >= spec.min_cut_strength:
                    return i
        threshold = spec.fill * offs.count(s, cuts.positions[i_max])
        best: dict[int, int] = {}
        for i in range(i_max, i0 - 1, -1):
            if offs.count(s, cuts.positions[i]) < threshold:
                break
            best.setdefault(cuts.strengths[i], i)
        return best[max(best)] if best else i_max

    @staticmethod
    def _hard_cut(offs: TokenOffsets, ov: int, s: int, avail: int, char_avail: int, n: int) -> int:
        """No whitespace cut fits: cut between word pieces (or characters)."""
        room = avail - offs.count(ov, s)
        e = offs.cut_after(s, room) if room > 0 else s
        e = min(e, ov + char_avail, n)
        return e if e > s else min(n, s + max(1, char_avail - (s - ov)))

    @staticmethod
    def _shrink(cuts: Cuts, offs: TokenOffsets, s: int, end: int) -> int:
        """The next smaller end after an exact count said ``end`` is too long."""
        i = cuts.index_at_or_after(end) - 1
        if i >= 0 and cuts.positions[i] > s:
            return cuts.positions[i]
        k = offs.count(s, end)
        if k > 1:
            e = offs.cut_after(s, k - 1)
            if s < e < end:
                return e
        return s + max(1, (end - s) // 2)

    # ------------------------------------------------------------------ overlap

    @staticmethod
    def _overlap(
        text: str, cuts: Cuts, offs: TokenOffsets, pol: OverlapPolicy, prev: Span, s: int
    ) -> int:
        """Start of the overlap: the longest structure-aligned tail of ``prev`` that fits."""
        lo = cuts.index_after(prev.content_start)
        hi = cuts.index_at_or_after(s)
        strong = max(pol.min_strength, Strength.SENTENCE)
        for i in range(lo, hi):
            c = cuts.positions[i]
            if cuts.strengths[i] >= strong and offs.count(c, s) <= pol.max_tokens:
                if offs.count(c, s) >= pol.min_tokens or pol.word_target is None:
                    return c
                break
        if pol.word_target is not None and pol.min_strength <= Strength.WORD:
            for i in range(lo, hi):
                c = cuts.positions[i]
                if 0 < offs.count(c, s) <= pol.word_target:
                    return c
        return s


def _no_lead(spec: PackSpec) -> PackSpec:
    return PackSpec(
        budget=spec.budget,
        max_chars=spec.max_chars,
        overlap=spec.overlap,
        min_cut_strength=spec.min_cut_strength,
        fill=spec.fill,
        keep_indent=spec.keep_indent,
    )
