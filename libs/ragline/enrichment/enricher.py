"""DocChunked -> DocEnriched: an ``Enrichment`` on every chunk, with provenance.

Document-level facts stay on the event's ``meta`` (what the source said). Chunk-level
facts go to ``Chunk.enrichment``; ``provenance`` says for each field whether it comes
from the source (authoritative: ``DocumentMeta`` and the document's own structure) or
was inferred here (language unless the source gave it, content type, entities, dates).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from ragline.enrichment.entities import extract_entities
from ragline.enrichment.header import build_header
from ragline.enrichment.language import UNDETERMINED, detect_language
from ragline.enrichment.settings import EnricherSettings
from ragline.events import Chunk, ChunkLevel, DocChunked, DocumentMeta, Enrichment
from ragline.text import TokenCounter, title_from_uri

__all__ = ["Enricher", "classify_content"]

Origin = Literal["source", "inferred"]
Entities = dict[str, tuple[str, ...]]

# DocumentMeta fields that are authoritative whenever the source set them
_META_FIELDS = (
    "uri",
    "source_type",
    "mime_type",
    "version",
    "series_id",
    "effective_date",
    "expiry_date",
    "created_at",
    "updated_at",
    "acl_groups",
    "classification",
    "trust",
)
_STEP = re.compile(r"^\s*(?:step\s+\d+\b|\d{1,2}[.)]\s+\S)", re.I | re.M)
_QUESTION = re.compile(r"^\s*(?:Q\s*[:.]|.{8,}\?\s*$)", re.M)
_ANSWER = re.compile(r"^\s*A\s*[:.]", re.M)


def classify_content(chunk: Chunk) -> str:
    """The chunker's structural type, refined for prose: ``procedure`` and ``faq``."""
    if chunk.content_type not in ("text", "list", "mixed"):
        return chunk.content_type
    if len(_STEP.findall(chunk.text)) >= 2:
        return "procedure"
    if _ANSWER.search(chunk.text) or len(_QUESTION.findall(chunk.text)) >= 2:
        return "faq"
    return chunk.content_type


def _document_title(meta: DocumentMeta, chunks: Sequence[Chunk]) -> tuple[str | None, Origin]:
    if meta.title:
        return meta.title, "source"
    for c in chunks:
        parsed = c.extra.get("doc_title")
        if isinstance(parsed, str) and parsed.strip():
            return parsed, "inferred"  # read from the content by the parser
    return title_from_uri(meta.uri), "inferred"


class Enricher:
    def __init__(
        self, counter: TokenCounter, *, header_budget: int, settings: EnricherSettings
    ) -> None:
        self._counter = counter
        self._budget = header_budget
        self._s = settings

    def enrich(self, event: DocChunked) -> list[Chunk]:
        meta = event.meta
        chunks = event.chunks
        title, title_origin = _document_title(meta, chunks)
        base: dict[str, Origin] = {f: "source" for f in _META_FIELDS if getattr(meta, f)}
        base.update(
            {
                "section_path": "source",
                "content_type": "inferred",
                "entities": "inferred",
                "dates": "inferred",
                "language": "source" if meta.language else "inferred",
            }
        )
        if title:
            base["title"] = title_origin
            base["contextual_header"] = title_origin
        found = self._inferred(chunks, meta.language)
        doc_language = meta.language
        headers: dict[tuple[str, ...], str] = {}
        out = []
        for chunk, (language, entities) in zip(chunks, found, strict=True):
            path = chunk.section_path
            if path not in headers:
                headers[path] = build_header(
                    self._counter,
                    budget=self._budget,
                    title=title,
                    section_path=path,
                    version=meta.version,
                    effective_date=meta.effective_date,
                )
            if language == UNDETERMINED:  # too little text: the document's language
                doc_language = doc_language or self._document_language(chunks)
                language = doc_language
            provenance = dict(base)
            if chunk.page_start is not None:
                provenance["page"] = "source"
            if chunk.line_start is not None:
                provenance["lines"] = "source"
            enrichment = Enrichment(
                language=language,
                content_type=classify_content(chunk),
                entities=entities,
                dates=tuple(sorted(set(entities.get("date", ())))),
                contextual_header=headers[path],
                provenance=provenance,
            )
            out.append(chunk.model_copy(update={"enrichment": enrichment}))
        return out

    def _inferred(
        self, chunks: Sequence[Chunk], source_language: str | None
    ) -> list[tuple[str, Entities]]:
        """Language and entities per chunk. Children are read; a parent (the text of its
        children) takes their majority language and the union of their entities."""
        found: list[tuple[str, Entities] | None] = [None] * len(chunks)
        kids: dict[str, list[tuple[str, Entities]]] = {}
        for i, c in enumerate(chunks):
            if c.level is ChunkLevel.CHILD:
                read = self._read(c, source_language)
                found[i] = read
                kids.setdefault(c.parent_id or "", []).append(read)
        for i, c in enumerate(chunks):
            if c.level is ChunkLevel.PARENT:
                mine = kids.get(c.chunk_id)
                found[i] = self._merge(mine) if mine else self._read(c, source_language)
        return [f for f in found if f is not None]

    def _read(self, chunk: Chunk, source_language: str | None) -> tuple[str, Entities]:
        entities = extract_entities(
            chunk.text,
            context="\n".join(chunk.section_path),  # headings name codes and versions too
            max_per_type=self._s.max_entities_per_type,
            products=chunk.content_type != "code",  # class names are not products
        )
        return source_language or detect_language(chunk.text), entities

    def _merge(self, kids: list[tuple[str, Entities]]) -> tuple[str, Entities]:
        votes = Counter(lang for lang, _ in kids if lang != UNDETERMINED)
        language = votes.most_common(1)[0][0] if votes else UNDETERMINED
        merged: dict[str, dict[str, None]] = {}
        for _, entities in kids:
            for kind, values in entities.items():
                merged.setdefault(kind, {}).update(dict.fromkeys(values))
        cap = self._s.max_entities_per_type
        return language, {kind: tuple(values)[:cap] for kind, values in merged.items()}

    def _document_language(self, chunks: Sequence[Chunk]) -> str:
        sample: list[str] = []
        size = 0
        for c in chunks:
            if c.level is ChunkLevel.CHILD and c.content_type not in ("code", "table"):
                sample.append(c.text)
                size += len(c.text)
                if size >= self._s.language_sample_chars:
                    break
        return detect_language("\n".join(sample)[: self._s.language_sample_chars])
