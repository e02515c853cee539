"""Builders of ParsedDocuments for the chunking tests (imported by the test modules)."""

from __future__ import annotations

from ragline.events import Block, BlockFlags, BlockKind, ParsedDocument, TableData

DOC_ID = "test:doc-1"
HASH = "a" * 64

_SENTENCES = [
    "The gateway rotates its signing keys every night.",
    "Operators can pin a key for up to seven days.",
    "A pinned key is reported on the status page.",
    "Replicas drain their connections before a restart.",
    "The scheduler retries failed deliveries with exponential backoff.",
    "Every configuration change is written to the audit log.",
    "Tenants never share a routing table.",
    "Health checks run every fifteen seconds.",
]


def prose(n: int, offset: int = 0) -> str:
    return " ".join(_SENTENCES[(i + offset) % len(_SENTENCES)] for i in range(n))


def para(text: str, path: tuple[str, ...] = ("Doc",), **kw: object) -> Block:
    return Block(kind=BlockKind.PARAGRAPH, text=text, section_path=path, **kw)  # type: ignore[arg-type]


def heading(text: str, path: tuple[str, ...], level: int = 1) -> Block:
    return Block(kind=BlockKind.HEADING, text=text, section_path=path, level=level)


def table(rows: int, path: tuple[str, ...] = ("Doc",), width: int = 3, cell: str = "x") -> Block:
    header = tuple(f"col{i}" for i in range(width))
    data = tuple(tuple(f"{cell}{r}-{c}" for c in range(width)) for r in range(rows))
    return Block(
        kind=BlockKind.TABLE,
        text="",
        section_path=path,
        table=TableData(header=header, rows=data, caption="Inventory", units="GiB"),
    )


def turn(text: str, speaker: str, ts: str, path: tuple[str, ...] = ("Call",)) -> Block:
    return Block(kind=BlockKind.TURN, text=text, speaker=speaker, timestamp=ts, section_path=path)


def flagged(text: str, path: tuple[str, ...] = ("Doc",), **flags: object) -> Block:
    return para(text, path, flags=BlockFlags(**flags))  # type: ignore[arg-type]


def doc(*blocks: Block, title: str | None = "Doc") -> ParsedDocument:
    return ParsedDocument(title=title, format="markdown", blocks=tuple(blocks))
