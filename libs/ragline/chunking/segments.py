"""Children of one parent window, per content kind.

A window's pieces are grouped into segments: a run of prose/list/quote pieces, a run of
transcript turns, one code unit, one table. Each kind has its own packing rules:
prose overlaps by 10-20 % at sentence (else word) cuts; turns are packed by whole
exchanges and overlap by whole turns; code is cut at blank-line groups with its
signature repeated; tables go by row groups (``tables``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ragline.chunking.boundaries import Cuts, Strength, find_cuts
from ragline.chunking.config import ChunkerSettings
from ragline.chunking.packer import OverlapPolicy, Packer, PackSpec, Span
from ragline.chunking.sections import TEXT_KINDS, Piece, Window, turn_prefix
from ragline.chunking.tables import split_table
from ragline.events import BlockKind, MetadataValue
from ragline.text.tokenizer import TokenCounter

__all__ = ["CONTENT_TYPES", "Draft", "SegmentChunker", "content_type_of"]

CONTENT_TYPES: dict[BlockKind, str] = {
    BlockKind.PARAGRAPH: "text",
    BlockKind.QUOTE: "text",
    BlockKind.LIST: "list",
    BlockKind.TABLE: "table",
    BlockKind.CODE: "code",
    BlockKind.TURN: "transcript",
}

Extra = dict[str, MetadataValue | list[str]]


def content_type_of(kinds: list[BlockKind]) -> str:
    types = {CONTENT_TYPES.get(k, "text") for k in kinds}
    return types.pop() if len(types) == 1 else "mixed"


@dataclass(frozen=True, kw_only=True)
class Draft:
    """A child before it gets its id: text plus which parts of which pieces it covers."""

    text: str
    tokens: int
    content_type: str
    strategy: str
    parts: tuple[tuple[Piece, int, int], ...]  # (piece, start, end) within piece.text
    overlap_chars: int = 0
    extra: Extra = field(default_factory=dict)


@dataclass(frozen=True)
class _Laid:
    """Pieces laid out in one string: (start, body_start, end, piece) per piece."""

    text: str
    spans: list[tuple[int, int, int, Piece]]
    starts: list[int]

    def parts(self, start: int, end: int) -> tuple[tuple[Piece, int, int], ...]:
        out = []
        for s, b, e, p in self.spans[max(0, bisect_right(self.starts, start) - 1) :]:
            if s >= end:
                break
            if e > start:
                out.append((p, max(0, start - b), min(len(p.text), end - b)))
        return tuple(out)

    def at(self, pos: int) -> tuple[int, int, int, Piece]:
        return self.spans[max(0, bisect_right(self.starts, pos) - 1)]


def _lay(pieces: list[Piece], sep: str, prefix: Callable[[Piece], str]) -> _Laid:
    chunks: list[str] = []
    spans: list[tuple[int, int, int, Piece]] = []
    pos = 0
    for i, p in enumerate(pieces):
        if i:
            chunks.append(sep)
            pos += len(sep)
        pre = prefix(p)
        chunks.append(pre + p.text)
        spans.append((pos, pos + len(pre), pos + len(pre) + len(p.text), p))
        pos += len(pre) + len(p.text)
    return _Laid("".join(chunks), spans, [s for s, _, _, _ in spans])


def _without(cuts: Cuts, ranges: list[tuple[int, int]]) -> Cuts:
    """Drop cuts inside (start, end] of sorted, disjoint ranges: e.g. between a speaker
    label and its text."""
    starts = [a for a, _ in ranges]
    keep = []
    for p, s in zip(cuts.positions, cuts.strengths, strict=True):
        i = bisect_right(starts, p - 1) - 1  # the last range starting before p
        if not (i >= 0 and ranges[i][0] < p <= ranges[i][1]):
            keep.append((p, s))
    return Cuts(positions=[p for p, _ in keep], strengths=[s for _, s in keep])


class SegmentChunker:
    def __init__(self, settings: ChunkerSettings, counter: TokenCounter) -> None:
        self._s = settings
        self._counter = counter
        self._packer = Packer(counter)
        self._base = PackSpec(budget=settings.child_max_tokens, max_chars=settings.child_max_chars)
        ov = None
        if settings.overlap_target > 0:
            ov = OverlapPolicy(
                min_strength=Strength.WORD,
                min_tokens=settings.overlap_min,
                max_tokens=settings.overlap_max,
                word_target=settings.overlap_target,
            )
        self._text_overlap = ov

    def children(self, window: Window, *, file_path: str | None) -> list[Draft]:
        drafts: list[Draft] = []
        pieces = window.pieces
        families = [self._family(p) for p in pieces]
        k = 0
        while k < len(pieces):  # runs of text or turns; code units and tables alone
            j = k + 1
            if families[k] in ("text", "turns"):
                while j < len(pieces) and families[j] == families[k]:
                    j += 1
            drafts.extend(self._segment(list(pieces[k:j]), families[k], file_path))
            k = j
        return drafts

    def _family(self, piece: Piece) -> str:
        """Segment family. A short snippet in prose (a fenced command: code without a
        symbol) stays with the sentence that introduces it instead of becoming a
        six-token child on its own; code units of source files keep their own chunks."""
        kind = piece.kind
        if kind is BlockKind.CODE and piece.block.symbol is None and not piece.continued:
            small = len(piece.text) <= 4 * self._s.child_max_tokens
            if small and self._counter.count(piece.text) <= self._s.child_max_tokens // 2:
                return "text"
        if kind in TEXT_KINDS:
            return "text"
        return {BlockKind.TURN: "turns", BlockKind.CODE: "code", BlockKind.TABLE: "table"}.get(
            kind, "text"
        )

    def _segment(self, run: list[Piece], family: str, file_path: str | None) -> list[Draft]:
        if family == "table":
            return self._table(run[0])
        if family == "code":
            return self._code(run[0], file_path)
        if family == "turns":
            return self._turns(run)
        return self._text(run)

    def _drafts(
        self, laid: _Laid, spans: list[Span], strategy: str, ctype: str | None
    ) -> list[Draft]:
        out = []
        for sp in spans:
            parts = laid.parts(sp.start, sp.end)
            out.append(
                Draft(
                    text=sp.text,
                    tokens=sp.tokens,
                    content_type=ctype or content_type_of([p.kind for p, _, _ in parts]),
                    strategy=strategy,
                    parts=parts,
                    overlap_chars=sp.overlap_chars,
                )
            )
        return out

    def _text(self, run: list[Piece]) -> list[Draft]:
        laid = _lay(run, "\n\n", lambda _p: "")
        cuts = find_cuts(laid.text, block_starts=[s for s, _, _, _ in laid.spans])
        spans = self._packer.pack(laid.text, cuts, replace(self._base, overlap=self._text_overlap))
        return self._drafts(laid, spans, "structure-recursive", None)

    def _turns(self, run: list[Piece]) -> list[Draft]:
        laid = _lay(run, "\n", lambda p: turn_prefix(p.block, p.continued))
        cuts = find_cuts(laid.text, block_starts=[s for s, _, _, _ in laid.spans])
        cuts = _without(cuts, [(s, b) for s, b, _, _ in laid.spans])

        def lead_for(pos: int) -> str:
            start, _, _, piece = laid.at(pos)
            return turn_prefix(piece.block, continued=True) if pos > start else ""

        overlap = OverlapPolicy(
            min_strength=Strength.BLOCK,
            min_tokens=0,
            max_tokens=self._s.overlap_max,
            word_target=None,
        )
        spec = replace(
            self._base, overlap=overlap, min_cut_strength=Strength.BLOCK, lead_for=lead_for
        )
        drafts = self._drafts(
            laid, self._packer.pack(laid.text, cuts, spec), "transcript-turns", "transcript"
        )
        out = []
        for d in drafts:
            blocks = [p.block for p, _, _ in d.parts]
            speakers = list(dict.fromkeys(b.speaker for b in blocks if b.speaker))
            stamps = [b.timestamp for b in blocks if b.timestamp]
            extra: Extra = {"speakers": speakers}
            if stamps:
                extra["timestamp_start"], extra["timestamp_end"] = stamps[0], stamps[-1]
            out.append(_with_extra(d, extra))
        return out

    def _code(self, piece: Piece, file_path: str | None) -> list[Draft]:
        block = piece.block
        laid = _lay([piece], "", lambda _p: "")
        cuts = find_cuts(laid.text, sentences=False, line_starts=True)
        lead = ""
        if block.signature and block.signature.strip():
            lead = self._counter.truncate(block.signature.strip(), self._s.child_max_tokens // 4)
            lead += "\n"

        def lead_for(pos: int) -> str:
            return lead if (piece.continued or pos > 0) else ""

        spec = replace(self._base, fill=0.4, lead_for=lead_for, keep_indent=True)
        drafts = self._drafts(laid, self._packer.pack(laid.text, cuts, spec), "code-unit", "code")
        extra: Extra = {"imports": list(block.imports)}
        for key, value in (
            ("file_path", file_path),
            ("symbol", block.symbol),
            ("signature", block.signature),
            ("code_language", block.language),
        ):
            if value:
                extra[key] = value
        n = len(drafts)
        return [
            _with_extra(d, {**extra, "code_part": k + 1, "code_parts": n})
            for k, d in enumerate(drafts)
        ]

    def _table(self, piece: Piece) -> list[Draft]:
        table = piece.table
        assert table is not None
        parts = split_table(
            table,
            self._counter,
            budget=self._s.child_max_tokens,
            max_chars=self._s.child_max_chars,
            header_tokens=self._s.table_header_tokens,
        )
        out = []
        for tp in parts:
            extra: Extra = {
                "table_header": list(tp.header),
                "row_start": piece.row_offset + tp.row_start + 1,
                "row_end": piece.row_offset + tp.row_end,
                "row_split": tp.row_split,
            }
            if tp.banded:  # the full header is in the parent's text, once
                extra["column_start"], extra["column_end"] = tp.col_start + 1, tp.col_end
                extra["table_columns"] = max(len(table.header), *(len(r) for r in table.rows))
            elif table.caption:
                extra["table_caption"] = table.caption
            if table.units and not tp.banded:
                extra["table_units"] = table.units
            out.append(
                Draft(
                    text=tp.text,
                    tokens=tp.tokens,
                    content_type="table",
                    strategy="table-rows",
                    parts=((piece, 0, len(piece.text)),),
                    extra=extra,
                )
            )
        return out


def _with_extra(d: Draft, extra: Extra) -> Draft:
    return Draft(
        text=d.text,
        tokens=d.tokens,
        content_type=d.content_type,
        strategy=d.strategy,
        parts=d.parts,
        overlap_chars=d.overlap_chars,
        extra={**d.extra, **extra},
    )
