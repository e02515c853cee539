"""Builders for scanner tests: events, the planted corpus, fixture files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ragline.events import (
    Block,
    BlockKind,
    Classification,
    DocParsed,
    DocumentMeta,
    ParsedDocument,
    TableData,
    TrustLevel,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scanning"


def make_event(
    blocks: list[Block] | list[str],
    *,
    doc_id: str = "wiki:doc-1",
    title: str | None = None,
    uri: str | None = None,
    metadata: dict[str, Any] | None = None,
    trust: TrustLevel = TrustLevel.MEDIUM,
    classification: Classification = Classification.INTERNAL,
    source_type: str = "wiki",
    tenant: str = "acme",
    change: str = "content",
) -> DocParsed:
    bs = tuple(
        b if isinstance(b, Block) else Block(kind=BlockKind.PARAGRAPH, text=b) for b in blocks
    )
    return DocParsed(
        tenant_id=tenant,
        document_id=doc_id,
        content_hash="a" * 64,
        source_seq=7,
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        meta=DocumentMeta(
            source_type=source_type,
            title=title,
            uri=uri,
            metadata=metadata or {},
            trust=trust,
            classification=classification,
            acl_groups=("eng",),
        ),
        document=ParsedDocument(format="markdown", title=title, blocks=bs),
        change=change,  # type: ignore[arg-type]
    )


def planted_documents() -> list[dict[str, Any]]:
    data = yaml.safe_load((FIXTURES / "planted.yaml").read_text(encoding="utf-8"))
    return list(data["documents"])


def planted_event(doc: dict[str, Any]) -> DocParsed:
    blocks = []
    for b in doc["blocks"]:
        table = None
        if "table" in b:
            t = b["table"]
            table = TableData(
                header=tuple(t["header"]),
                rows=tuple(tuple(r) for r in t["rows"]),
                caption=t.get("caption"),
            )
        blocks.append(
            Block(
                kind=BlockKind(b["kind"]),
                text=b["text"],
                level=b.get("level"),
                section_path=tuple(b.get("section_path", ())),
                table=table,
            )
        )
    return make_event(
        blocks,
        doc_id=f"planted:{doc['id']}",
        title=doc.get("title"),
        uri=doc.get("uri"),
        metadata=doc.get("metadata"),
        classification=Classification(doc.get("classification", "internal")),
    )


def load_yaml(name: str) -> Any:
    return yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
