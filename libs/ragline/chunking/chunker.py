"""ParsedDocument -> parent and child ``Chunk``s with deterministic ids.

Order of the output: each parent followed by its children, in document order. Ordinals
count per level, and ``chunk_id = hash(document_id, content_hash, strategy_version,
level, ordinal)``, so the same input under the same settings always yields the same ids.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from ragline.chunking.config import ChunkerSettings
from ragline.chunking.sections import Piece, Window, join_pieces, sections_of, windows_of
from ragline.chunking.segments import Draft, Extra, SegmentChunker, content_type_of
from ragline.events import Block, BlockFlags, Chunk, ChunkLevel, ParsedDocument
from ragline.hashing import chunk_id
from ragline.text.tokenizer import TokenCounter

__all__ = ["Chunker", "merge_flags"]


def merge_flags(blocks: Iterable[Block]) -> BlockFlags:
    """OR of injection flags, union of rules and PII types, sum of redactions."""
    seen: dict[int, Block] = {id(b): b for b in blocks}
    flags = [b.flags for b in seen.values()]
    return BlockFlags(
        injection_suspect=any(f.injection_suspect for f in flags),
        injection_rules=tuple(sorted({r for f in flags for r in f.injection_rules})),
        pii_types=tuple(sorted({t for f in flags for t in f.pii_types})),
        redactions=sum(f.redactions for f in flags),
    )


class _Lines:
    """Newline positions of each block, found once per document: locating a chunk is then
    a binary search, not a scan of its block (per chunk, that was quadratic: minutes on a
    multi-megabyte single block)."""

    def __init__(self) -> None:
        self._of: dict[int, tuple[Block, list[int]]] = {}  # the block is held: stable id

    def newlines(self, block: Block) -> list[int]:
        hit = self._of.get(id(block))
        if hit is None:
            text, found, at = block.text, [], block.text.find("\n")
            while at >= 0:
                found.append(at)
                at = text.find("\n", at + 1)
            hit = self._of[id(block)] = (block, found)
        return hit[1]

    def consistent(self, block: Block) -> bool:
        if block.line_start is None:
            return False
        return block.line_end is None or block.line_end - block.line_start == len(
            self.newlines(block)
        )

    def line_at(self, piece: Piece, pos: int) -> int | None:
        """Source line of ``piece.text[pos]`` (exact when the block's line range is)."""
        block = piece.block
        if block.line_start is None:
            return None
        if not self.consistent(block):
            return block.line_start
        return block.line_start + bisect_left(self.newlines(block), piece.offset + pos)

    def locate(self, parts: tuple[tuple[Piece, int, int], ...]) -> dict[str, int | None]:
        pages = [p.block.page for p, _, _ in parts if p.block.page is not None]
        first, start, _ = parts[0]
        last, _, end = parts[-1]
        line_start = self.line_at(first, start)
        line_end = self.line_at(last, max(start if last is first else 0, end - 1))
        if last.block.line_end is not None and not self.consistent(last.block):
            line_end = last.block.line_end
        return {
            "page_start": min(pages) if pages else None,
            "page_end": max(pages) if pages else None,
            "line_start": line_start,
            "line_end": line_end,
        }


class Chunker:
    """Stateless after construction; safe to share between threads."""

    def __init__(self, settings: ChunkerSettings, counter: TokenCounter) -> None:
        self.settings = settings
        self.counter = counter
        self.strategy_version = settings.strategy_version
        self._segments = SegmentChunker(settings, counter)

    def chunk(
        self,
        doc: ParsedDocument,
        *,
        document_id: str,
        content_hash: str,
        file_path: str | None = None,
    ) -> list[Chunk]:
        out: list[Chunk] = []
        n_parents = n_children = 0
        common: Extra = {"doc_title": doc.title} if doc.title else {}
        lines = _Lines()
        for section in sections_of(doc):
            windows = windows_of(
                section,
                self.counter,
                self.settings.parent_max_tokens,
                self.settings.child_max_tokens,
            )
            for window in windows:
                parent = self._parent(window, document_id, content_hash, n_parents, common, lines)
                out.append(parent)
                n_parents += 1
                for draft in self._segments.children(window, file_path=file_path):
                    out.append(
                        self._child(
                            draft,
                            window,
                            parent.chunk_id,
                            document_id,
                            content_hash,
                            n_children,
                            common,
                            lines,
                        )
                    )
                    n_children += 1
        return out

    def _id(self, document_id: str, content_hash: str, level: ChunkLevel, ordinal: int) -> str:
        return chunk_id(document_id, content_hash, self.strategy_version, level.value, ordinal)

    def _parent(
        self,
        window: Window,
        document_id: str,
        content_hash: str,
        ordinal: int,
        common: Extra,
        lines: _Lines,
    ) -> Chunk:
        text = join_pieces(window.pieces)
        parts = tuple((p, 0, len(p.text)) for p in window.pieces)
        return Chunk(
            chunk_id=self._id(document_id, content_hash, ChunkLevel.PARENT, ordinal),
            level=ChunkLevel.PARENT,
            ordinal=ordinal,
            text=text,
            section_path=window.path,
            content_type=content_type_of([p.kind for p in window.pieces]),
            token_count=window.tokens,
            strategy="section" if window.of == 1 else "section-window",
            strategy_version=self.strategy_version,
            flags=merge_flags(p.block for p in window.pieces),
            extra={**common, "window": window.number + 1, "windows": window.of},
            **lines.locate(parts),
        )

    def _child(
        self,
        draft: Draft,
        window: Window,
        parent_id: str,
        document_id: str,
        content_hash: str,
        ordinal: int,
        common: Extra,
        lines: _Lines,
    ) -> Chunk:
        return Chunk(
            chunk_id=self._id(document_id, content_hash, ChunkLevel.CHILD, ordinal),
            parent_id=parent_id,
            level=ChunkLevel.CHILD,
            ordinal=ordinal,
            text=draft.text,
            section_path=window.path,
            content_type=draft.content_type,
            token_count=draft.tokens,
            strategy=draft.strategy,
            strategy_version=self.strategy_version,
            flags=merge_flags(p.block for p, _, _ in draft.parts),
            extra={**common, **draft.extra, "overlap_chars": draft.overlap_chars},
            **lines.locate(draft.parts),
        )
