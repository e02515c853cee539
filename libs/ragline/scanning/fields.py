"""Every string of a parsed document that can reach an index, out and back in.

A secret in a title, a URI, a metadata value, a table cell or a heading (which becomes
other blocks' ``section_path``) reaches the index as surely as one in a paragraph, so
the scanner sees all of them as text items and the document is rebuilt from the
scanned items: block text, table cells, code symbols, speakers and turn timestamps (the
chunker prefixes ``[timestamp]`` to turn text), titles, uri, version and mime type (the
contextual header, citations and ``documents`` columns), series id and every metadata
value. Typed fields (dates, enums, numbers) cannot hold text and are not scanned.

Identities cannot be redacted: the document id (it keys every topic and row), the uri
(the document's address), ``supersedes`` ids, ACL groups, the source type and metadata
keys. They are scanned too (``DocumentTexts.identity``); a secret in one blocks the
document (reason ``secret_in_identity``). PII in them is left alone: an ACL group that
is a user's e-mail address is an identity, not content; PII in the uri is redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragline.events import Block, DocParsed, DocumentMeta, ParsedDocument, TableData

__all__ = ["DOC_LEVEL", "DocumentTexts", "FieldRef", "collect", "rebuild"]

DOC_LEVEL = -1  # "block index" of document-level fields (titles, uri, metadata)


@dataclass(frozen=True, kw_only=True, slots=True)
class FieldRef:
    """Where an item lives: ``block`` (or ``DOC_LEVEL``) and a path inside it."""

    block: int
    path: tuple[str | int, ...]

    @property
    def is_block_text(self) -> bool:
        return self.block >= 0 and self.path == ("text",)


@dataclass(kw_only=True, slots=True)
class DocumentTexts:
    items: list[str] = field(default_factory=list)
    refs: list[FieldRef] = field(default_factory=list)
    # section-path strings are scanned once each, however many blocks repeat them
    section_items: dict[str, int] = field(default_factory=dict)
    # table cell item -> its column header (secrets by column: ``| user | password |``)
    cell_header: dict[int, str] = field(default_factory=dict)
    # items that copy another item (a section path equal to a heading's text): scanned
    # and redacted like the rest, but not counted twice in the findings summary
    copies: set[int] = field(default_factory=set)
    # items that are identities: a secret there blocks the document (see module doc)
    identity: set[int] = field(default_factory=set)
    # identity items that are never rewritten (the uri is: PII in it is redacted)
    fixed: set[int] = field(default_factory=set)

    def add_identity(
        self, path: tuple[str | int, ...], text: str | None, *, rewritable: bool = False
    ) -> None:
        if text:
            self.identity.add(len(self.items))
            if not rewritable:
                self.fixed.add(len(self.items))
            self.add(DOC_LEVEL, path, text)

    def add(self, block: int, path: tuple[str | int, ...], text: str | None) -> None:
        if text:
            self.items.append(text)
            self.refs.append(FieldRef(block=block, path=path))

    @property
    def n_bytes(self) -> int:
        return sum(len(t.encode("utf-8", "surrogatepass")) for t in self.items)


def collect(event: DocParsed) -> DocumentTexts:
    out = DocumentTexts()
    for i, b in enumerate(event.document.blocks):
        out.add(i, ("text",), b.text)
        if b.table is not None:
            for j, h in enumerate(b.table.header):
                out.add(i, ("table", "header", j), h)
            for r, row in enumerate(b.table.rows):
                for c, cell in enumerate(row):
                    if c < len(b.table.header) and cell:
                        out.cell_header[len(out.items)] = b.table.header[c]
                    out.add(i, ("table", "rows", r, c), cell)
            out.add(i, ("table", "caption"), b.table.caption)
            out.add(i, ("table", "units"), b.table.units)
        for name in _BLOCK_STRINGS:
            out.add(i, (name,), getattr(b, name))
        for k, imp in enumerate(b.imports):
            out.add(i, ("imports", k), imp)
        for s in b.section_path:
            if s and s not in out.section_items:
                out.section_items[s] = len(out.items)
                out.add(DOC_LEVEL, ("section_path", s), s)
    block_texts = {b.text.strip() for b in event.document.blocks}
    out.copies = {i for s, i in out.section_items.items() if s.strip() in block_texts}
    out.add(DOC_LEVEL, ("document", "title"), event.document.title)
    m = event.meta
    out.add(DOC_LEVEL, ("meta", "title"), m.title)
    out.add(DOC_LEVEL, ("meta", "series_id"), m.series_id)
    out.add(DOC_LEVEL, ("meta", "version"), m.version)
    out.add(DOC_LEVEL, ("meta", "mime_type"), m.mime_type)
    for key, value in m.metadata.items():
        if isinstance(value, str):
            if value:  # the key names the value, as a column header does (``password: x``)
                out.cell_header[len(out.items)] = key
            out.add(DOC_LEVEL, ("meta", "metadata", key), value)
    out.add_identity(("meta", "uri"), m.uri, rewritable=True)
    out.add_identity(("document_id",), event.document_id)
    out.add_identity(("meta", "source_type"), m.source_type)
    for k, sup in enumerate(m.supersedes):
        out.add_identity(("meta", "supersedes", k), sup)
    for k, group in enumerate(m.acl_groups):
        out.add_identity(("meta", "acl_groups", k), group)
    for k, key in enumerate(m.metadata):
        out.add_identity(("meta", "metadata_key", k), key)
    return out


# block strings besides text, table and imports that reach chunk text, citations or the index
_BLOCK_STRINGS = ("symbol", "signature", "speaker", "timestamp", "language")


def _fit(value: str, limit: int | None) -> str:
    return value if limit is None or len(value) <= limit else value[:limit]


def _rebuild_table(t: TableData, new: dict[tuple[str | int, ...], str]) -> TableData:
    header = tuple(new.get(("table", "header", j), h) for j, h in enumerate(t.header))
    rows = tuple(
        tuple(new.get(("table", "rows", r, c), cell) for c, cell in enumerate(row))
        for r, row in enumerate(t.rows)
    )
    return t.model_copy(
        update={
            "header": header,
            "rows": rows,
            "caption": new.get(("table", "caption"), t.caption),
            "units": new.get(("table", "units"), t.units),
        }
    )


def rebuild(
    event: DocParsed,
    texts: DocumentTexts,
    scanned: Sequence[str],
    block_updates: Sequence[dict[str, Any]],
) -> tuple[DocumentMeta, ParsedDocument]:
    """The event's meta and document with every item replaced by its scanned text.

    ``block_updates[i]`` carries extra field updates for block ``i`` (its flags).
    """
    per_block: dict[int, dict[tuple[str | int, ...], str]] = {}
    doc_level: dict[tuple[str | int, ...], str] = {}
    for ref, value in zip(texts.refs, scanned, strict=True):
        (doc_level if ref.block == DOC_LEVEL else per_block.setdefault(ref.block, {}))[ref.path] = (
            value
        )
    blocks: list[Block] = []
    for i, b in enumerate(event.document.blocks):
        new = per_block.get(i, {})
        update: dict[str, Any] = dict(block_updates[i])
        update["text"] = new.get(("text",), b.text)
        if b.table is not None:
            update["table"] = _rebuild_table(b.table, new)
        for name in _BLOCK_STRINGS:
            update[name] = new.get((name,), getattr(b, name))
        update["imports"] = tuple(new.get(("imports", k), v) for k, v in enumerate(b.imports))
        update["section_path"] = tuple(
            doc_level.get(("section_path", s), s) for s in b.section_path
        )
        blocks.append(b.model_copy(update=update))
    document = event.document.model_copy(
        update={
            "blocks": tuple(blocks),
            "title": doc_level.get(("document", "title"), event.document.title),
        }
    )
    m = event.meta
    metadata = {
        k: doc_level.get(("meta", "metadata", k), v) if isinstance(v, str) else v
        for k, v in m.metadata.items()
    }
    title = doc_level.get(("meta", "title"), m.title)
    uri = doc_level.get(("meta", "uri"), m.uri)
    series = doc_level.get(("meta", "series_id"), m.series_id)
    version = doc_level.get(("meta", "version"), m.version)
    mime = doc_level.get(("meta", "mime_type"), m.mime_type)
    meta = m.model_copy(
        update={
            "title": None if title is None else _fit(title, 1024),
            "uri": None if uri is None else _fit(uri, 2048),
            "series_id": None if series is None else _fit(series, 512),
            "version": None if version is None else _fit(version, 64),
            "mime_type": None if mime is None else _fit(mime, 255),
            "metadata": metadata,
        }
    )
    return meta, document
